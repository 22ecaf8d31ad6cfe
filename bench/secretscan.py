"""What judging one value for secrets costs: ``syncer.secrets.values.judge`` against Yelp's
``detect-secrets`` plugins (when installed; syncer does not depend on it).

    python -m bench.secretscan [--n 5000]

Prints the import time of each (in a fresh interpreter) and microseconds per value over a
mix of typical ConfigMap values (addresses, numbers, small properties/YAML files, URLs) and
credential-shaped ones. Values are made distinct so ``judge``'s memory of values does not count.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

VALUES = (
    "192.168.68.75 100.115.97.90", "15", "debug", "https://auth.example/token",
    "spring.application.name=web\nspring.datasource.url=jdbc:postgresql://db/app\nlogging.level.root=INFO\n",
    "server:\n  port: 8080\n  host: 0.0.0.0\ndatabase:\n  user: app\n  pool: 10\n",
    "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijklmnopqrstuvwx",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "ASIAY34FZKBOKMUTVV7A", "postgres://app:pw@db/x",
)
DS_PLUGINS = ("aws.AWSKeyDetector", "slack.SlackDetector", "stripe.StripeDetector", "private_key.PrivateKeyDetector",
              "basic_auth.BasicAuthDetector", "openai.OpenAIDetector")


def _import_ms(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print((time.perf_counter() - t) * 1000)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.secretscan")
    ap.add_argument("--n", type=int, default=5000)
    n = ap.parse_args(argv).n
    from syncer.secrets.values import judge

    print(f"syncer.secrets.values import: {_import_ms('import syncer.secrets.values'):.1f} ms")
    start = time.perf_counter()
    for i in range(n):
        judge(f"{VALUES[i % len(VALUES)]}{i}")
    print(f"syncer.secrets.values.judge: {(time.perf_counter() - start) / n * 1e6:.1f} us/value ({n} values)")
    try:
        import importlib

        plugins = [getattr(importlib.import_module(f"detect_secrets.plugins.{mod}"), cls)()
                   for mod, cls in (p.split(".") for p in DS_PLUGINS)]
    except ImportError:
        print("detect-secrets: not installed (pip install detect-secrets to compare)")
        return
    imports = "; ".join(f"import detect_secrets.plugins.{p.split('.')[0]}" for p in DS_PLUGINS)
    print(f"detect-secrets plugins import: {_import_ms(imports):.1f} ms")
    start = time.perf_counter()
    for i in range(n):
        value = f"{VALUES[i % len(VALUES)]}{i}"
        any(next(iter(p.analyze_string(value)), None) for p in plugins)
    print(f"detect-secrets plugins (analyze_string, {len(plugins)}): {(time.perf_counter() - start) / n * 1e6:.1f} us/value")


if __name__ == "__main__":
    main()
