# syntax=docker/dockerfile:1
#
# syncer image: `docker build -t <registry>/syncer:0.1.0 .`
#
# Stage 1 builds wheels for syncer and its runtime dependencies (only those
# listed in pyproject's `dependencies`, no test extras). Stage 2 installs them
# from that local wheel directory, without network, compilers or build tools,
# and adds the programs syncer shells out to: git and ssh.

ARG PYTHON_IMAGE=python:3.12-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY syncer ./syncer
# Optional CA bundle for pip, for build machines that reach PyPI through a TLS-inspecting
# proxy: `--secret id=pip-ca,src=/etc/ssl/certs/ca-certificates.crt`. Not given: the base
# image's own CAs. A secret mount never lands in a layer.
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    python -m pip wheel --wheel-dir /wheels .


FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp \
    GIT_TERMINAL_PROMPT=0

# Unpinned on purpose: take Debian's security updates of the release the
# base image tag pins.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# The uid/gid the chart's securityContext expects. ssh refuses to run for a
# uid without a passwd entry, so the user must exist in the image.
RUN groupadd --system --gid 10001 syncer \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin syncer \
    && install -d -o 10001 -g 10001 -m 0750 /work

# Install from the build stage's wheels without copying them into a layer;
# --no-index means nothing but those wheels can be installed, so the versions
# are the ones the build stage resolved.
# hadolint ignore=DL3013
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels syncer \
    && syncer --help >/dev/null

USER 10001:10001
WORKDIR /work
EXPOSE 8080
ENTRYPOINT ["syncer"]
CMD ["run"]
