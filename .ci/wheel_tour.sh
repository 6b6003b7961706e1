#!/usr/bin/env bash
# A wheel install runs the README's tour (issue 55): build the wheel, install it (not editable)
# into a fresh environment outside the checkout, and run tests/project/test_readme.py's tour with that
# environment's interpreter (GRALC_TOUR_PYTHON). Needs make's .venv for pytest itself.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# built from a copy of the files git tracks (and new ones it does not ignore): nothing is
# written into the checkout (setuptools builds in ./build)
$PY - "$tmp/src" <<'PY'
import pathlib, shutil, subprocess, sys
dest = pathlib.Path(sys.argv[1])
listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], check=True,
                        capture_output=True).stdout.decode().split("\0")
for name in filter(None, listed):
    if pathlib.Path(name).is_file():  # a tracked file deleted in the working tree is left out
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(name, dest / name)
PY
$PY -m pip wheel --quiet --no-deps "$tmp/src" -w "$tmp/dist"
python3 -m venv "$tmp/env"
for attempt in 1 2 3; do
  "$tmp/env/bin/python" -m pip install --quiet --retries 10 --timeout 60 "${TORCH_SPEC:-torch==2.13.0}" && break
  echo "wheel_tour: torch install attempt $attempt failed" >&2; sleep 20
done
for attempt in 1 2 3; do
  "$tmp/env/bin/python" -m pip install --quiet --retries 10 --timeout 60 -c constraints.txt "$tmp"/dist/gralc-*.whl && break
  echo "wheel_tour: gralc install attempt $attempt failed" >&2; sleep 20
done
(cd "$tmp" && "$tmp/env/bin/gralc" --help >/dev/null)  # the console script, outside the checkout
GRALC_TOUR_PYTHON="$tmp/env/bin/python" $PY -m pytest -q tests/project/test_readme.py -p no:cacheprovider
