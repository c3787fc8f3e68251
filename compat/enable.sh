# Sets up a shell for Tessera's SDK-shaped install, as the Poplar SDK's
# enable.sh does: `source <prefix>/enable.sh`. Compilers then find the
# Poplar headers (CPATH) and libraries (LIBRARY_PATH), programs find the
# libraries at run time (LD_LIBRARY_PATH), and PATH has popc and tessera.
if [ -n "${BASH_SOURCE:-}" ]; then
  _tessera_script="${BASH_SOURCE[0]}"
elif [ -n "${ZSH_VERSION:-}" ]; then
  _tessera_script="${(%):-%x}"
else
  _tessera_script="$0"
fi
TESSERA_SDK="$(cd "$(dirname "$_tessera_script")" && pwd)"
unset _tessera_script
export TESSERA_SDK
export CPATH="$TESSERA_SDK/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$TESSERA_SDK/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$TESSERA_SDK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$TESSERA_SDK/bin${PATH:+:$PATH}"
export PKG_CONFIG_PATH="$TESSERA_SDK/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CMAKE_PREFIX_PATH="$TESSERA_SDK${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
