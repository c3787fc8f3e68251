#!/usr/bin/env bash
# Registers the build's tessera Python package with Debian's /usr/bin/python3
# (the interpreter with NumPy; a pyenv python3 may come first on PATH): a
# tessera.pth file in its site folder names build/python, so
# `/usr/bin/python3 -c "import tessera"` works from any directory.
# Usage: scripts/register-python.sh [build folder]   (default: build)
#   TESSERA_PTH_DIR=DIR writes the .pth file into DIR instead (a virtual
#   environment's site-packages, say).
set -euo pipefail
cd "$(dirname "$0")/.."
package_dir="$(cd "${1:-build}/python" && pwd)"
py=/usr/bin/python3
site="${TESSERA_PTH_DIR:-$($py -c 'import site; print(site.getsitepackages()[0])')}"
if ! { mkdir -p "$site" && [ -w "$site" ]; } 2>/dev/null; then
  site=$($py -c 'import site; print(site.getusersitepackages())')
  mkdir -p "$site"
fi
echo "$package_dir" >"$site/tessera.pth"
(cd / && $py -c 'import site, sys; site.addsitedir(sys.argv[1]); import tessera; print("tessera", tessera.__version__, "registered for /usr/bin/python3 from", tessera.__path__[0])' "$site")
