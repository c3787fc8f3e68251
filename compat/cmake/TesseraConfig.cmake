# find_package(Tessera): the SDK-named libraries as imported targets
# Tessera::poplar, Tessera::popops, Tessera::poputil, Tessera::poplin,
# Tessera::popnn, Tessera::poprand and Tessera::pva (the report reader),
# with the include directory attached.
include(${CMAKE_CURRENT_LIST_DIR}/TesseraTargets.cmake)
get_filename_component(Tessera_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.."
                       ABSOLUTE)
set(Tessera_INCLUDE_DIRS "${Tessera_PREFIX}/include")
set(Tessera_POPC "${Tessera_PREFIX}/bin/popc")
