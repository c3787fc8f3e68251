// CSV files as Dataset::csv reads them (gzip or plain, told apart by
// content): every element of the dataset is read, with the default options
// (a header, features only) or, for half the inputs (by a hash, so a crash
// reproduces), with a label column, half features and no header. One read
// per execution: a read costs milliseconds under ASan.
#include "FuzzCommon.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/support/Hash.hpp"

namespace {

void readAll(const std::string &path, const tessera::data::CsvOptions &opt) {
  using namespace tessera;
  data::Iterator it = data::Dataset::csv(path, opt).iterator();
  data::Element e;
  while (it.next(e))
    for (const data::HostTensor &t : e.components)
      tessera::fuzz::require(t.numBytes() == 0 || t.data(),
                             "a CSV element has bytes but no storage");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  const std::string path =
      fuzz::writeScratch("input.csv", fuzz::bytes(data, size));
  data::CsvOptions opt;
  if (hash64(data, size) & 1) {
    opt.header = false;
    opt.labelColumn = "0";
    opt.featureType = Type::HALF;
  }
  return fuzz::runOne([&] { readAll(path, opt); });
}
