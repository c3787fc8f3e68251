#include "Rewrite.hpp"

#include "tessera/support/Error.hpp"

#include <queue>
#include <vector>

namespace tessera::passes::detail {

void replaceUses(ir::Module &m, ir::ValueId from, ir::ValueId to,
                 const std::function<bool(std::size_t)> &skip) {
  std::vector<ir::Op> &ops = m.mutableOps();
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!skip(i))
      for (ir::ValueId &operand : ops[i].operands)
        if (operand == from)
          operand = to;
}

void sortTopologically(ir::Module &m) {
  std::vector<ir::Op> &ops = m.mutableOps();
  const std::size_t n = ops.size();
  std::vector<std::vector<std::size_t>> users(n);
  std::vector<std::size_t> pending(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (ir::ValueId operand : ops[i].operands)
      if (m.value(operand).kind == ir::ValueKind::OpResult) {
        users[m.value(operand).def].push_back(i);
        ++pending[i];
      }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>>
      ready;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<ir::Op> sorted;
  sorted.reserve(n);
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    sorted.push_back(std::move(ops[i]));
    for (std::size_t u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  TESSERA_INTERNAL_ASSERT(sorted.size() == n,
                          "a rewrite left a cycle among the ops");
  ops = std::move(sorted);
  for (std::size_t i = 0; i < n; ++i)
    for (ir::ValueId r : ops[i].results)
      m.mutableValue(r).def = static_cast<std::uint32_t>(i);
}

} // namespace tessera::passes::detail
