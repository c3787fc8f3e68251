#!/usr/bin/env bash
# Registers the build's tessera Python package with Debian's /usr/bin/python3
# (the interpreter with NumPy; a pyenv python3 may come first on PATH): a
# tessera.pth file in its site folder names build/python, so
# `/usr/bin/python3 -c "import tessera"` works from any directory.
# Usage: scripts/register-python.sh [build folder]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
package_dir="$(cd "${1:-build}/python" && pwd)"
py=/usr/bin/python3
site=$($py -c 'import site; print(site.getsitepackages()[0])')
if ! { mkdir -p "$site" && [ -w "$site" ]; } 2>/dev/null; then
  site=$($py -c 'import site; print(site.getusersitepackages())')
  mkdir -p "$site"
fi
echo "$package_dir" >"$site/tessera.pth"
(cd / && $py -c 'import tessera; print("tessera", tessera.__version__, "registered for /usr/bin/python3 from", tessera.__path__[0])')
