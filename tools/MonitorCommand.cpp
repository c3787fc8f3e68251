// `tessera monitor`: who holds which IPUs, as gc-monitor shows for a real
// system. The holders come from DeviceManager::attachments(), which lists an
// IPU only while its lock is held, so a killed holder's IPUs show as free
// even though its record file is still on disk.
#include "Commands.hpp"
#include "TextTable.hpp"

#include "tessera/device/DeviceManager.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <map>
#include <memory>
#include <ostream>

namespace tessera::tools {
namespace {

struct MonitorOptions {
  bool json = false;
};

/// One process's hold on one device: the IPUs of the device it attached.
struct Holder {
  long pid = 0;
  unsigned deviceId = 0;
  std::string user, command, attachTime;
  std::vector<unsigned> ipus;
};

// Seconds since an ISO 8601 UTC time ("2024-05-01T12:34:56Z"); -1 when the
// text is not one (a record written by hand).
std::int64_t secondsSince(const std::string &iso, std::time_t now) {
  std::tm tm{};
  const char *end = ::strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0')
    return -1;
  return static_cast<std::int64_t>(now - ::timegm(&tm));
}

// Records are per IPU; a process attaching a device of four IPUs wrote four
// of them, which read better as one line.
std::vector<Holder> holdersOf(const std::vector<AttachRecord> &records) {
  std::map<std::pair<long, unsigned>, Holder> byKey;
  std::vector<Holder> unknown;
  for (const AttachRecord &r : records) {
    if (r.pid == 0) {
      unknown.push_back(Holder{0, r.deviceId, r.user, r.command, "", {r.ipu}});
      continue;
    }
    Holder &h = byKey[{r.pid, r.deviceId}];
    if (h.ipus.empty())
      h = Holder{r.pid, r.deviceId, r.user, r.command, r.attachTime, {}};
    h.ipus.push_back(r.ipu);
  }
  std::vector<Holder> out;
  for (auto &[key, h] : byKey)
    out.push_back(std::move(h));
  out.insert(out.end(), unknown.begin(), unknown.end());
  return out;
}

nlohmann::ordered_json monitorJson(const DeviceManager &m,
                                   const std::vector<AttachRecord> &records,
                                   const std::vector<Holder> &holders,
                                   std::time_t now) {
  nlohmann::ordered_json ipus = nlohmann::ordered_json::array();
  std::size_t next = 0;
  for (unsigned ipu = 0; ipu < m.getNumIPUs(); ++ipu) {
    nlohmann::ordered_json entry = {{"ipu", ipu}};
    if (next < records.size() && records[next].ipu == ipu) {
      entry["state"] = "attached";
      entry["deviceId"] = records[next].deviceId;
      entry["pid"] = records[next].pid;
      ++next;
    } else {
      entry["state"] = "free";
    }
    ipus.push_back(std::move(entry));
  }
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  for (const Holder &h : holders)
    processes.push_back({{"pid", h.pid},
                         {"user", h.user},
                         {"command", h.command},
                         {"deviceId", h.deviceId},
                         {"ipus", h.ipus},
                         {"attachTime", h.attachTime},
                         {"attachedSeconds", secondsSince(h.attachTime, now)}});
  return {{"system",
           {{"ipus", m.getNumIPUs()},
            {"arch", m.getArch()},
            {"systemDirectory", m.getSystemDirectory()}}},
          {"ipus", std::move(ipus)},
          {"processes", std::move(processes)}};
}

void printMonitor(std::ostream &os, const DeviceManager &m,
                  const std::vector<AttachRecord> &records,
                  const std::vector<Holder> &holders, std::time_t now) {
  os << fmt::format("System: {} {} IPUs, {} attached (lock folder {})\n\n",
                    m.getNumIPUs(), m.getArch(), records.size(),
                    m.getSystemDirectory());
  TextTable ipus({"IPU", "State", "Device", "PID"}, {true, false, true, true});
  std::size_t next = 0;
  for (unsigned ipu = 0; ipu < m.getNumIPUs(); ++ipu) {
    if (next < records.size() && records[next].ipu == ipu) {
      const AttachRecord &r = records[next++];
      ipus.addRow({std::to_string(ipu), "attached",
                   r.pid ? std::to_string(r.deviceId) : "?",
                   r.pid ? std::to_string(r.pid) : "?"});
    } else {
      ipus.addRow({std::to_string(ipu), "free", "", ""});
    }
  }
  ipus.print(os, 2);
  if (holders.empty()) {
    os << "\nNo process has IPUs attached.\n";
    return;
  }
  os << fmt::format("\nAttached processes ({}):\n", holders.size());
  TextTable procs({"PID", "User", "Device", "IPUs", "Attached since",
                   "Time attached", "Command"},
                  {true, false, true, false, false, true, false});
  for (const Holder &h : holders) {
    const std::int64_t age = secondsSince(h.attachTime, now);
    // Records are written by other processes: what they say is printed
    // with its control characters escaped, so it cannot drive the terminal.
    procs.addRow({h.pid ? std::to_string(h.pid) : "?", printableText(h.user),
                  h.pid ? std::to_string(h.deviceId) : "?", ipuRange(h.ipus),
                  h.attachTime.empty() ? "?" : printableText(h.attachTime),
                  age < 0 ? "?" : durationText(age), printableText(h.command)});
  }
  procs.print(os, 2);
}

void runMonitor(const MonitorOptions &o, const CommandStreams &streams) {
  const DeviceManager m = DeviceManager::createDeviceManager();
  const std::vector<AttachRecord> records = m.attachments();
  const std::vector<Holder> holders = holdersOf(records);
  const std::time_t now = std::time(nullptr);
  // JSON escapes control characters itself; bytes that are not UTF-8
  // become U+FFFD rather than an exception.
  if (o.json)
    streams.out << monitorJson(m, records, holders, now)
                       .dump(2, ' ', false,
                             nlohmann::ordered_json::error_handler_t::replace)
                << '\n';
  else
    printMonitor(streams.out, m, records, holders, now);
}

} // namespace

void addMonitorCommand(CLI::App &app, const CommandStreams &streams) {
  auto options = std::make_shared<MonitorOptions>();
  CLI::App *sub = app.add_subcommand(
      "monitor", "Show each IPU's state and the processes attached to them");
  sub->footer(
      "An IPU is attached while a process holds its lock in the system's "
      "lock folder (TESSERA_SYSTEM_DIR, default /tmp/tessera-system-<uid>); "
      "a process that exits or is killed frees its IPUs at once.");
  sub->add_flag("--json", options->json,
                "Print JSON: the system, every IPU's state and the attached "
                "processes");
  sub->callback([options, streams] { runMonitor(*options, streams); });
}

} // namespace tessera::tools
