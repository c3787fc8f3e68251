// The PopDist environment, joining the other instances, and the host-side
// exchange the engine's cross-replica copies use between instances.
#include "tessera/dist/Instances.hpp"

#include "Communicator.hpp"

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>

namespace tessera::dist {
namespace {

// Unset variables read as nothing; set ones must be whole numbers.
std::optional<unsigned> variable(const char *name) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (errno != 0 || *end != '\0' || n > std::numeric_limits<unsigned>::max())
    throw DistError(std::string(name) + "=" + v +
                    " is not a whole number; start the instances with "
                    "`tessera poprun`, which sets it");
  return unsigned(n);
}

unsigned required(const char *name) {
  if (std::optional<unsigned> v = variable(name))
    return *v;
  throw DistError(std::string(name) +
                  " is not set though POPDIST_NUM_INSTANCES is; start the "
                  "instances with `tessera poprun`, which sets both");
}

class MpiReplicaExchange : public ReplicaExchange {
public:
  explicit MpiReplicaExchange(std::shared_ptr<Communicator> comm)
      : comm_(std::move(comm)) {}
  void allGather(const void *send,
                 const std::vector<std::size_t> &bytesPerInstance,
                 void *recv) override {
    comm_->allGatherV(static_cast<const std::byte *>(send), bytesPerInstance,
                      static_cast<std::byte *>(recv));
  }

private:
  std::shared_ptr<Communicator> comm_;
};

} // namespace

bool isPopdistEnvSet() { return std::getenv("POPDIST_NUM_INSTANCES"); }

InstanceInfo instanceFromEnvironment() {
  InstanceInfo i;
  if (!isPopdistEnvSet())
    return i;
  i.numInstances = required("POPDIST_NUM_INSTANCES");
  i.instanceIndex = required("POPDIST_INSTANCE_INDEX");
  i.totalReplicas = required("POPDIST_NUM_TOTAL_REPLICAS");
  i.localReplicas = required("POPDIST_NUM_LOCAL_REPLICAS");
  i.replicaOffset = required("POPDIST_REPLICA_INDEX_OFFSET");
  i.ipusPerReplica = variable("POPDIST_NUM_IPUS_PER_REPLICA").value_or(1);
  i.ipuOffset = variable("POPDIST_IPU_OFFSET")
                    .value_or(i.replicaOffset * i.ipusPerReplica);
  if (i.numInstances == 0 || i.instanceIndex >= i.numInstances ||
      i.localReplicas == 0 ||
      std::uint64_t(i.localReplicas) * i.numInstances != i.totalReplicas ||
      i.replicaOffset != i.instanceIndex * i.localReplicas)
    throw DistError(
        "the POPDIST_ variables do not fit together: instance " +
        std::to_string(i.instanceIndex) + " of " +
        std::to_string(i.numInstances) + " with " +
        std::to_string(i.localReplicas) + " of " +
        std::to_string(i.totalReplicas) + " replicas from replica " +
        std::to_string(i.replicaOffset) +
        "; each instance must run total / instances replicas from index x "
        "local replicas (start the instances with `tessera poprun`)");
  return i;
}

std::vector<std::pair<std::string, std::string>>
popdistEnvironment(unsigned numInstances, unsigned index,
                   unsigned totalReplicas, unsigned ipusPerReplica) {
  const unsigned local = totalReplicas / numInstances;
  auto s = [](unsigned v) { return std::to_string(v); };
  return {{"POPDIST_NUM_INSTANCES", s(numInstances)},
          {"POPDIST_INSTANCE_INDEX", s(index)},
          {"POPDIST_NUM_TOTAL_REPLICAS", s(totalReplicas)},
          {"POPDIST_NUM_LOCAL_REPLICAS", s(local)},
          {"POPDIST_REPLICA_INDEX_OFFSET", s(index * local)},
          {"POPDIST_NUM_IPUS_PER_REPLICA", s(ipusPerReplica)},
          {"POPDIST_IPU_OFFSET", s(index * local * ipusPerReplica)}};
}

Instances::Instances(InstanceInfo info) : info_(info) {
  if (info_.numInstances <= 1)
    return;
  comm_ = Communicator::world();
  if (comm_->size() != info_.numInstances ||
      comm_->rank() != info_.instanceIndex) {
    comm_->markFailed();
    throw DistError(
        "instance " + std::to_string(info_.instanceIndex) + " of " +
        std::to_string(info_.numInstances) +
        " (POPDIST_ variables) is MPI rank " + std::to_string(comm_->rank()) +
        " of " + std::to_string(comm_->size()) +
        "; start the instances with `tessera poprun`, which keeps them in "
        "step");
  }
}

Instances::~Instances() {
  if (comm_ && std::uncaught_exceptions() > 0)
    comm_->markFailed();
}

session::InstanceConfig Instances::sessionInstances() const {
  session::InstanceConfig c;
  c.count = info_.numInstances;
  c.index = info_.instanceIndex;
  if (comm_)
    c.exchange = std::make_shared<MpiReplicaExchange>(comm_);
  return c;
}

void Instances::checkSameOptions(
    const std::vector<std::pair<std::string, std::string>> &options) const {
  if (!comm_)
    return;
  std::string mine;
  for (const auto &[name, value] : options)
    mine += name + '\n' + value + '\n';
  const std::vector<std::string> all = comm_->allGatherStrings(mine);
  for (unsigned i = 1; i < all.size(); ++i) {
    if (all[i] == all[0])
      continue;
    // Name the first option that differs: parse both lists.
    auto parse = [](const std::string &s) {
      std::vector<std::string> lines;
      std::size_t at = 0;
      while (at < s.size()) {
        const std::size_t nl = s.find('\n', at);
        lines.push_back(s.substr(at, nl - at));
        at = nl + 1;
      }
      return lines;
    };
    const std::vector<std::string> a = parse(all[0]), b = parse(all[i]);
    std::string what = "their option lists differ";
    for (std::size_t k = 0; k + 1 < std::max(a.size(), b.size()); k += 2) {
      const std::string an = k < a.size() ? a[k] : "(none)";
      const std::string av = k + 1 < a.size() ? a[k + 1] : "(unset)";
      const std::string bv = k + 1 < b.size() ? b[k + 1] : "(unset)";
      if (av != bv || (k < b.size() && b[k] != an)) {
        what = an + " is " + av + " on instance 0 but " + bv + " on instance " +
               std::to_string(i);
        break;
      }
    }
    throw DistError(
        "the instances were started with different options: " + what +
        "; give every instance the same command (tessera poprun "
        "does)");
  }
}

void Instances::broadcastFromFirst(session::Checkpoint &ckpt) const {
  if (!comm_)
    return;
  for (auto &[name, t] : ckpt.variables)
    comm_->broadcast(t.data(), t.numBytes(), 0);
}

MpiStats Instances::mpiStats() const {
  return comm_ ? comm_->stats() : MpiStats{};
}

} // namespace tessera::dist
