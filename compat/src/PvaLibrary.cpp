// libpva.so, the SDK-shaped home of the pva report reader: its code comes
// from the tessera_pva and tessera_report archives linked in whole; this
// file names the library, as LibraryName.cpp.in does for the others.
extern "C" __attribute__((visibility("default"))) const char *
tessera_pva_library() {
  return "pva (Tessera)";
}
