#include "tessera/graph/Graph.hpp"

#include "tessera/device/Device.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

namespace tessera {
namespace {

std::string str(std::size_t v) { return std::to_string(v); }

std::string shapeString(const std::vector<std::size_t> &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + str(shape[i]);
  return s + "]";
}

std::size_t product(const std::vector<std::size_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                         std::multiplies<>());
}

// Sets elements [begin, end) of a sorted interval list to `tile`, merging
// neighbours on the same tile so the list stays compact.
void assignTile(std::vector<TileInterval> &m, std::size_t begin,
                std::size_t end, unsigned tile) {
  if (begin >= end)
    return;
  if (m.empty() || m.back().end <= begin) {
    if (!m.empty() && m.back().end == begin && m.back().tile == tile)
      m.back().end = end;
    else
      m.push_back({begin, end, tile});
    return;
  }
  auto first = std::lower_bound(
      m.begin(), m.end(), begin,
      [](const TileInterval &iv, std::size_t b) { return iv.end <= b; });
  std::vector<TileInterval> replaced;
  auto last = first;
  for (; last != m.end() && last->begin < end; ++last) {
    if (last->begin < begin)
      replaced.push_back({last->begin, begin, last->tile});
    if (last->end > end)
      replaced.push_back({end, last->end, last->tile});
  }
  replaced.push_back({begin, end, tile});
  std::sort(replaced.begin(), replaced.end(),
            [](const TileInterval &a, const TileInterval &b) {
              return a.begin < b.begin;
            });
  auto pos = m.erase(first, last);
  pos = m.insert(pos, replaced.begin(), replaced.end());
  // Merge around the inserted range.
  std::size_t lo = pos - m.begin();
  std::size_t from = lo ? lo - 1 : 0;
  std::size_t to = std::min(m.size(), lo + replaced.size() + 1);
  std::vector<TileInterval> merged;
  for (std::size_t i = from; i < to; ++i) {
    if (!merged.empty() && merged.back().end == m[i].begin &&
        merged.back().tile == m[i].tile)
      merged.back().end = m[i].end;
    else
      merged.push_back(m[i]);
  }
  m.erase(m.begin() + from, m.begin() + to);
  m.insert(m.begin() + from, merged.begin(), merged.end());
}

// Calls fn(var, start, stride, count, tensorOffset) for the pieces of t's
// runs covering tensor elements [begin, end).
template <typename F>
void forEachPiece(const Tensor &t, std::size_t begin, std::size_t end, F &&fn) {
  std::size_t pos = 0;
  for (const Run &r : t.runs()) {
    std::size_t rb = pos, re = pos + r.count;
    pos = re;
    if (re <= begin)
      continue;
    if (rb >= end)
      break;
    std::size_t b = std::max(rb, begin), e = std::min(re, end);
    fn(r.var, r.start + static_cast<std::int64_t>(b - rb) * r.stride, r.stride,
       e - b, b);
  }
}

} // namespace

Graph::Graph(const Target &target, replication_factor r)
    : data_(std::make_shared<GraphData>()) {
  if (r.value == 0)
    throw GraphError("Graph: the replication factor must be at least 1");
  if (target.getNumIPUs() % r.value != 0)
    throw GraphError("Graph: replication factor " + str(r.value) +
                     " does not divide the target's " +
                     str(target.getNumIPUs()) +
                     " IPUs; each replica needs the same number of IPUs");
  data_->target = std::make_shared<const Target>(
      r.value == 1 ? target
                   : Target::createIPUTarget(target.getNumIPUs() / r.value,
                                             target.getTargetArchString(),
                                             target.figuresAsOptions()));
  data_->replicationFactor = r.value;
  data_->registry = std::make_shared<VertexRegistry>();
  target_ = data_->target;
}

Graph::Graph(const Device &device, replication_factor r)
    : Graph(device.getTarget(), r) {}

Graph::Graph(std::shared_ptr<GraphData> data,
             std::shared_ptr<const Target> target, unsigned tileOffset)
    : data_(std::move(data)), target_(std::move(target)),
      tileOffset_(tileOffset) {}

Graph::~Graph() = default;
Graph::Graph(Graph &&) noexcept = default;
Graph &Graph::operator=(Graph &&) noexcept = default;

Graph Graph::createVirtualGraph(unsigned lowerTile, unsigned upperTile) {
  const Target &t = getTarget();
  if (lowerTile >= upperTile || upperTile > t.getNumTiles())
    throw GraphError("createVirtualGraph: tiles [" + str(lowerTile) + ", " +
                     str(upperTile) + ") are not a non-empty range within " +
                     "this graph's " + str(t.getNumTiles()) + " tiles");
  const unsigned perIpu = t.getTilesPerIPU();
  const unsigned count = upperTile - lowerTile;
  const bool wholeIpus = lowerTile % perIpu == 0 && count % perIpu == 0;
  if (!wholeIpus && lowerTile / perIpu != (upperTile - 1) / perIpu)
    throw GraphError("createVirtualGraph: tiles [" + str(lowerTile) + ", " +
                     str(upperTile) + ") cover part of more than one IPU (" +
                     str(perIpu) +
                     " tiles each); use whole IPUs or a "
                     "range within one IPU");
  // Ops plan over getTarget(): a range inside one IPU must look like a
  // smaller IPU to them, and whole IPUs like themselves.
  OptionFlags figures = t.figuresAsOptions();
  if (!wholeIpus)
    figures.set("tilesPerIPU", str(count));
  auto target = std::make_shared<const Target>(Target::createIPUTarget(
      wholeIpus ? count / perIpu : 1, t.getTargetArchString(), figures));
  return Graph(data_, std::move(target), tileOffset_ + lowerTile);
}

const Target &Graph::getTarget() const { return *target_; }
unsigned Graph::getReplicationFactor() const {
  return data_->replicationFactor;
}

Tensor Graph::addVariable(Type type, const std::vector<std::size_t> &shape,
                          const DebugContext &dc) {
  VariableData v;
  v.name = dc.name.empty() ? "var" + str(data_->variables.size()) : dc.name;
  v.type = type;
  v.shape = shape;
  v.numElements = product(shape);
  const auto id = static_cast<std::uint32_t>(data_->variables.size());
  const auto n = static_cast<std::int64_t>(v.numElements);
  data_->variables.push_back(std::move(v));
  std::vector<Run> runs;
  if (n > 0)
    runs.push_back(Run{id, 0, 1, n});
  return Tensor(type, shape, runs);
}

Tensor Graph::addVariable(Type type, const std::vector<std::size_t> &shape,
                          VariableMappingMethod method,
                          const DebugContext &dc) {
  Tensor t = addVariable(type, shape, dc);
  if (method == VariableMappingMethod::LINEAR)
    mapTensorLinearly(*this, t);
  return t;
}

void Graph::checkCount(const char *what, const std::vector<std::size_t> &shape,
                       std::size_t count) {
  if (count != product(shape))
    throw ShapeError(std::string(what) + ": shape " + shapeString(shape) +
                     " has " + str(product(shape)) + " elements but " +
                     str(count) + " values were given");
}

Tensor Graph::addConstantBytes(Type type, const std::vector<std::size_t> &shape,
                               Type srcType, const void *values, bool fill,
                               const DebugContext &dc) {
  Tensor t =
      addVariable(type, shape, dc.name.empty() ? DebugContext("constant") : dc);
  VariableData &v = data_->variables.back();
  v.isConstant = true;
  const std::size_t size = typeSize(type);
  v.initialValue.resize(v.numElements * size);
  if (fill) {
    std::byte one[8];
    convertElements(srcType, values, type, one, 1);
    for (std::size_t i = 0; i < v.numElements; ++i)
      std::memcpy(v.initialValue.data() + i * size, one, size);
  } else {
    convertElements(srcType, values, type, v.initialValue.data(),
                    v.numElements);
  }
  return t;
}

void Graph::checkTensor(const Tensor &t, const char *what) const {
  if (!t.valid())
    throw GraphError(std::string(what) + ": the tensor is empty (default "
                                         "constructed); pass a tensor made "
                                         "by this graph");
  for (const Run &r : t.runs())
    if (r.var >= data_->variables.size())
      throw GraphError(std::string(what) +
                       ": the tensor does not belong to this graph");
}

Tensor Graph::clone(const Tensor &t, const DebugContext &dc) {
  return clone(t.elementType(), t, dc);
}

namespace {

// Whether \p runs (as many elements as variable \p var has) name every
// element of var once. Runs of consecutive elements (either way) are
// checked as spans, sorted; only other strides are checked element by
// element.
bool coversOnce(ArrayView<Run> runs, std::uint32_t var, std::size_t n) {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  bool spansOnly = true;
  for (const Run &r : runs) {
    if (r.var != var || r.stride == 0)
      return false;
    if (r.stride == 1 || r.count == 1)
      spans.emplace_back(r.start, r.start + r.count);
    else if (r.stride == -1)
      spans.emplace_back(r.start - r.count + 1, r.start + 1);
    else
      spansOnly = false;
  }
  if (spansOnly) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first < spans[i - 1].second)
        return false;
    return true;
  }
  std::vector<bool> seen(n, false);
  for (const Run &r : runs)
    for (std::int64_t i = 0; i < r.count; ++i) {
      const auto e = static_cast<std::size_t>(r.start + i * r.stride);
      if (seen[e])
        return false;
      seen[e] = true;
    }
  return true;
}

} // namespace

Tensor Graph::cloneInOrder(Type type, const Tensor &t, const DebugContext &dc) {
  const auto &runs = t.runs();
  if (runs.empty())
    return Tensor();
  const std::uint32_t var = runs[0].var;
  const VariableData &vd = data_->variables[var];
  if (vd.numElements != t.numElements())
    return Tensor();
  if (!coversOnce(runs, var, vd.numElements))
    return Tensor();
  const unsigned last = tileOffset_ + getTarget().getNumTiles();
  for (const TileInterval &iv : vd.mapping)
    if (iv.tile < tileOffset_ || iv.tile >= last)
      return Tensor();
  const std::vector<TileInterval> mapping = vd.mapping;
  const std::uint32_t id =
      addVariable(type, {vd.numElements}, dc).runs()[0].var;
  data_->variables[id].mapping = mapping;
  std::vector<Run> view = runs;
  for (Run &r : view)
    r.var = id;
  return Tensor(type, t.shape(), view);
}

Tensor Graph::clone(Type type, const Tensor &t, const DebugContext &dc) {
  checkTensor(t, "clone");
  const DebugContext name =
      dc.name.empty() ? DebugContext(getDebugName(t) + "/clone") : dc;
  if (Tensor c = cloneInOrder(type, t, name); c.valid())
    return c;
  Tensor c = addVariable(type, t.shape(), name);
  TileMapping m = getTileMapping(t, false);
  setTileMapping(c, m);
  return c;
}

void Graph::setTileMapping(const Tensor &t, unsigned tile) {
  checkTensor(t, "setTileMapping");
  if (tile >= getTarget().getNumTiles())
    throw GraphError("setTileMapping: tile " + str(tile) +
                     " is out of range: the target has " +
                     str(getTarget().getNumTiles()) + " tiles (0.." +
                     str(getTarget().getNumTiles() - 1) + ")");
  tile += tileOffset_;
  for (const Run &r : t.runs()) {
    auto &m = data_->variables[r.var].mapping;
    if (r.stride == 1 || r.count == 1) {
      assignTile(m, r.start, r.start + r.count, tile);
    } else if (r.stride == 0) {
      assignTile(m, r.start, r.start + 1, tile);
    } else {
      for (std::int64_t i = 0; i < r.count; ++i) {
        std::int64_t e = r.start + i * r.stride;
        assignTile(m, e, e + 1, tile);
      }
    }
  }
}

void Graph::setTileMapping(const Tensor &t, const TileMapping &mapping) {
  checkTensor(t, "setTileMapping");
  if (mapping.size() > getTarget().getNumTiles())
    throw GraphError("setTileMapping: the mapping names " +
                     str(mapping.size()) + " tiles but the target has " +
                     str(getTarget().getNumTiles()));
  // The variable ranges to map, in the order the mapping names them.
  struct Piece {
    std::uint32_t var;
    std::size_t begin, end;
    unsigned tile;
  };
  std::vector<Piece> pieces;
  for (unsigned tile = 0; tile < mapping.size(); ++tile)
    for (const Interval &iv : mapping[tile]) {
      if (iv.end() > t.numElements())
        throw GraphError("setTileMapping: interval [" + str(iv.begin()) + ", " +
                         str(iv.end()) + ") for tile " + str(tile) +
                         " is beyond the tensor's " + str(t.numElements()) +
                         " elements");
      forEachPiece(t, iv.begin(), iv.end(),
                   [&](std::uint32_t var, std::int64_t start,
                       std::int64_t stride, std::size_t count, std::size_t) {
                     const unsigned at = tile + tileOffset_;
                     const auto b = static_cast<std::size_t>(start);
                     if (stride == 1 || count == 1)
                       pieces.push_back({var, b, b + count, at});
                     else if (stride == 0)
                       pieces.push_back({var, b, b + 1, at});
                     else
                       for (std::size_t i = 0; i < count; ++i) {
                         const auto e = static_cast<std::size_t>(
                             start + std::int64_t(i) * stride);
                         pieces.push_back({var, e, e + 1, at});
                       }
                   });
    }
  // Assigned in memory order, each piece lands at the end of its variable's
  // list: mapping a fragmented tensor tile by tile inserted into the middle
  // of the list each time, quadratic in the pieces (a float16 ResNet-50's
  // clones spent minutes there). Only pieces that overlap must keep the
  // mapping's order, since the last assignment of an element wins.
  std::vector<Piece> sorted = pieces;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Piece &a, const Piece &b) {
                     return a.var != b.var ? a.var < b.var : a.begin < b.begin;
                   });
  bool overlap = false;
  for (std::size_t i = 1; i < sorted.size() && !overlap; ++i)
    overlap = sorted[i].var == sorted[i - 1].var &&
              sorted[i].begin < sorted[i - 1].end;
  for (const Piece &p : overlap ? pieces : sorted)
    assignTile(data_->variables[p.var].mapping, p.begin, p.end, p.tile);
}

TileMapping Graph::getTileMapping(const Tensor &t, bool requireComplete) const {
  checkTensor(t, "getTileMapping");
  TileMapping result(getTarget().getNumTiles());
  auto add = [&](unsigned tile, std::size_t b, std::size_t e) {
    auto &v = result[tile];
    if (!v.empty() && v.back().end() == b)
      v.back().last = e;
    else
      v.emplace_back(b, e);
  };
  std::size_t pos = 0;
  for (const Run &r : t.runs()) {
    const VariableData &var = data_->variables[r.var];
    for (std::int64_t i = 0; i < r.count;) {
      const auto e = static_cast<std::size_t>(r.start + i * r.stride);
      auto it = std::upper_bound(
          var.mapping.begin(), var.mapping.end(), e,
          [](std::size_t x, const TileInterval &iv) { return x < iv.end; });
      if (it == var.mapping.end() || it->begin > e) {
        if (requireComplete)
          throw GraphError("tensor \"" + var.name + "\" element " + str(e) +
                           " is not mapped to any tile; map it with "
                           "graph.setTileMapping(tensor, tile) or "
                           "mapTensorLinearly(graph, tensor)");
        ++i;
        continue;
      }
      // Elements of this run still inside the interval.
      std::int64_t n = 1;
      if (r.stride == 1)
        n = std::min<std::int64_t>(r.count - i, it->end - e);
      else if (r.stride == 0)
        n = r.count - i;
      if (it->tile < tileOffset_ || it->tile - tileOffset_ >= result.size())
        throw GraphError(
            "tensor \"" + var.name + "\" element " + str(e) + " is on tile " +
            str(it->tile) + ", outside this virtual graph's tiles [" +
            str(tileOffset_) + ", " + str(tileOffset_ + result.size()) +
            "); copy it to a tensor of this graph first");
      add(it->tile - tileOffset_, pos + i, pos + i + n);
      i += n;
    }
    pos += r.count;
  }
  return result;
}

ComputeSet Graph::addComputeSet(const DebugContext &dc) {
  ComputeSetData cs;
  cs.name = dc.name.empty() ? "cs" + str(data_->computeSets.size()) : dc.name;
  data_->computeSets.push_back(std::move(cs));
  return ComputeSet(static_cast<unsigned>(data_->computeSets.size() - 1));
}

namespace {

// Compute sets \p a and \p b of \p all, checked for \p what.
std::pair<ComputeSetData &, ComputeSetData &>
twoComputeSets(std::vector<ComputeSetData> &all, const char *what, ComputeSet a,
               ComputeSet b) {
  if (a.getId() >= all.size() || b.getId() >= all.size())
    throw GraphError(std::string(what) + ": compute set " +
                     str(std::max(a.getId(), b.getId())) +
                     " does not belong to this graph");
  return {all[a.getId()], all[b.getId()]};
}

} // namespace

void Graph::setHostKernel(ComputeSet cs, ComputeSet kernel) {
  auto [c, k] = twoComputeSets(data_->computeSets, "setHostKernel", cs, kernel);
  if (cs.getId() == kernel.getId() || c.isHostKernel || k.hostKernel)
    throw GraphError("setHostKernel: compute set \"" + k.name +
                     "\" cannot be the host kernel of \"" + c.name +
                     "\"; a kernel is a third compute set of its own");
  c.hostKernel = kernel.getId();
  k.isHostKernel = true;
}

void Graph::pairHostKernels(ComputeSet first, ComputeSet second) {
  auto [a, b] =
      twoComputeSets(data_->computeSets, "pairHostKernels", first, second);
  if (first.getId() == second.getId() || !a.hostKernel || !b.hostKernel ||
      a.hostKernelPair || b.hostKernelPair)
    throw GraphError("pairHostKernels: \"" + a.name + "\" and \"" + b.name +
                     "\" must be two compute sets with host kernels "
                     "(setHostKernel) and no pair yet");
  a.hostKernelPair = second.getId();
  b.hostKernelPair = first.getId();
}

VertexRef Graph::addVertex(ComputeSet cs, const std::string &vertexType) {
  if (cs.getId() >= data_->computeSets.size())
    throw GraphError("addVertex: compute set " + str(cs.getId()) +
                     " does not belong to this graph");
  const RegisteredVertex *cls = data_->registry->find(vertexType);
  if (!cls) {
    std::string known;
    for (const std::string &n : data_->registry->names())
      known += (known.empty() ? "" : ", ") + n;
    throw GraphError("addVertex: unknown vertex class \"" + vertexType +
                     "\"; add the codelet that defines it with "
                     "graph.addCodelets(\"file.cpp\") first (known classes: " +
                     (known.empty() ? "none" : known) + ")");
  }
  VertexData v;
  v.vertexClass = cls;
  v.computeSet = cs.getId();
  v.fields.resize(cls->info.fields.size());
  const auto id = static_cast<unsigned>(data_->vertices.size());
  data_->vertices.push_back(std::move(v));
  data_->computeSets[cs.getId()].vertices.push_back(id);
  return VertexRef(this, id);
}

VertexRef Graph::addVertex(
    ComputeSet cs, const std::string &vertexType,
    std::initializer_list<std::pair<std::string, Tensor>> connections) {
  VertexRef v = addVertex(cs, vertexType);
  for (const auto &[field, tensor] : connections)
    connect(v[field], tensor);
  return v;
}

VertexData &Graph::vertexOf(VertexRef v) {
  if (v.graph() != this || v.getId() >= data_->vertices.size())
    throw GraphError("the vertex does not belong to this graph");
  return data_->vertices[v.getId()];
}

std::pair<VertexData *, unsigned> Graph::fieldOf(const FieldRef &f) {
  VertexData &v = vertexOf(f.vertex());
  const auto &fields = v.vertexClass->info.fields;
  for (unsigned i = 0; i < fields.size(); ++i)
    if (fields[i].name == f.name())
      return {&v, i};
  std::string known;
  for (const auto &fi : fields)
    known += (known.empty() ? "" : ", ") + fi.name;
  throw GraphError("vertex class \"" + v.vertexClass->info.name +
                   "\" has no field \"" + f.name() + "\" (fields: " + known +
                   ")");
}

void Graph::setTileMapping(VertexRef v, unsigned tile) {
  if (tile >= getTarget().getNumTiles())
    throw GraphError("setTileMapping: tile " + str(tile) +
                     " is out of range for a vertex: the target has " +
                     str(getTarget().getNumTiles()) + " tiles");
  vertexOf(v).tile = tile + tileOffset_;
}

namespace {
bool isList(codelet::Shape s) {
  return s == codelet::Shape::VectorList || s == codelet::Shape::ScalarList;
}
} // namespace

namespace {

std::string connectWhere(const VertexData &v, const codelet::FieldInfo &info) {
  return "connect " + v.vertexClass->info.name + "." + info.name;
}

// What every tensor connected to an edge must satisfy; the message is built
// only on failure, as list fields check one tensor per element.
void checkEdge(const VertexData &v, const codelet::FieldInfo &info,
               const Tensor &t, bool scalarElem) {
  if (info.direction == codelet::Direction::State)
    throw GraphError(connectWhere(v, info) +
                     ": the field is plain state, not an edge; set "
                     "it with graph.setInitialValue(v[\"" +
                     info.name + "\"], value)");
  if (t.elementType() != info.elementType)
    throw TypeError(connectWhere(v, info) + ": the field holds " +
                    std::string(typeName(info.elementType)) +
                    " but the tensor holds " +
                    std::string(typeName(t.elementType())));
  if (scalarElem && t.numElements() != 1)
    throw ShapeError(connectWhere(v, info) +
                     ": the field is a single element but the "
                     "tensor has " +
                     str(t.numElements()) + " (shape " + t.shapeToString() +
                     ")");
}

} // namespace

void Graph::connect(const FieldRef &field, const Tensor &t) {
  checkTensor(t, "connect");
  auto [v, idx] = fieldOf(field);
  const codelet::FieldInfo &info = v->vertexClass->info.fields[idx];
  const bool scalarElem =
      info.shape == codelet::Shape::Scalar ||
      (info.shape == codelet::Shape::ScalarList && field.isIndexed());
  checkEdge(*v, info, t, scalarElem);
  FieldBinding &b = v->fields[idx];
  if (isList(info.shape)) {
    if (!field.isIndexed()) {
      if (info.shape == codelet::Shape::VectorList)
        throw GraphError(connectWhere(*v, info) +
                         ": the field is a list of vectors; connect "
                         "a std::vector of tensors, or connect "
                         "v[\"" +
                         info.name + "\"][i] one by one");
      // A list of single elements connects to each element of t.
      std::vector<Tensor> elems;
      Tensor flat = t.flatten();
      elems.reserve(flat.numElements());
      for (std::size_t i = 0; i < flat.numElements(); ++i)
        elems.push_back(flat.slice(i, i + 1));
      connect(field, elems);
      return;
    }
    if (b.tensors.size() <= field.index()) {
      if (b.size && field.index() >= *b.size)
        throw GraphError(connectWhere(*v, info) + ": index " +
                         str(field.index()) + " is beyond the field size " +
                         str(*b.size) + " set with setFieldSize");
      // Elements connected one by one fill the declared size exactly.
      if (b.size && b.tensors.capacity() < *b.size)
        b.tensors.reserve(*b.size);
      b.tensors.resize(field.index() + 1);
    }
    b.tensors[field.index()] = t;
  } else {
    if (field.isIndexed())
      throw GraphError(connectWhere(*v, info) +
                       ": the field is not a list; connect it "
                       "without an index");
    b.tensors.assignOne(t);
  }
  b.connected = true;
}

void Graph::connect(const FieldRef &field, const std::vector<Tensor> &tensors) {
  auto [v, idx] = fieldOf(field);
  const codelet::FieldInfo &info = v->vertexClass->info.fields[idx];
  if (!isList(info.shape) || field.isIndexed())
    throw GraphError("connect " + v->vertexClass->info.name + "." + info.name +
                     ": a list of tensors connects only to a "
                     "list field (Vector<Input<Vector<T>>> or "
                     "VectorList)");
  FieldBinding &b = v->fields[idx];
  if (b.size && *b.size != tensors.size())
    throw ShapeError("connect " + v->vertexClass->info.name + "." + info.name +
                     ": the field size is " + str(*b.size) + " but " +
                     str(tensors.size()) + " tensors were given");
  // The checks of connect(field[i], tensors[i]) for every element, without
  // a FieldRef and a field lookup per element.
  b.tensors.clear();
  b.tensors.reserve(tensors.size());
  const bool scalarElem = info.shape == codelet::Shape::ScalarList;
  for (const Tensor &t : tensors) {
    checkTensor(t, "connect");
    checkEdge(*v, info, t, scalarElem);
    b.tensors.push_back(t);
  }
  b.connected = true;
}

void Graph::setFieldSize(const FieldRef &field, std::size_t size) {
  auto [v, idx] = fieldOf(field);
  const codelet::FieldInfo &info = v->vertexClass->info.fields[idx];
  if (!isList(info.shape) && !(info.direction == codelet::Direction::State &&
                               info.shape == codelet::Shape::Vector))
    throw GraphError("setFieldSize " + v->vertexClass->info.name + "." +
                     info.name +
                     ": only list fields and plain-state vectors have a "
                     "size to set");
  if (size > FieldSize::kMax)
    throw GraphError("setFieldSize " + v->vertexClass->info.name + "." +
                     info.name + ": the size " + str(size) +
                     " is beyond the largest field size, " +
                     str(FieldSize::kMax));
  v->fields[idx].size = size;
}

void Graph::setFieldState(const FieldRef &field, Type srcType,
                          const void *values, std::size_t count) {
  auto [v, idx] = fieldOf(field);
  const codelet::FieldInfo &info = v->vertexClass->info.fields[idx];
  const std::string where =
      "setInitialValue " + v->vertexClass->info.name + "." + info.name;
  if (info.direction != codelet::Direction::State)
    throw GraphError(where + ": the field is an edge; connect a tensor to "
                             "it with graph.connect instead");
  if (info.shape == codelet::Shape::Scalar && count != 1)
    throw ShapeError(where + ": the field is one value but " + str(count) +
                     " were given");
  FieldBinding &b = v->fields[idx];
  if (b.size && *b.size != count)
    throw ShapeError(where + ": the field size is " + str(*b.size) + " but " +
                     str(count) + " values were given");
  std::byte *bytes = b.state.assign(count * typeSize(info.elementType), count);
  convertElements(srcType, values, info.elementType, bytes, count);
  b.connected = true;
}

void Graph::setTensorInitialValue(const Tensor &t, Type srcType,
                                  const void *values, std::size_t count,
                                  bool fill) {
  checkTensor(t, "setInitialValue");
  if (count != t.numElements())
    throw ShapeError("setInitialValue: the tensor has " + str(t.numElements()) +
                     " elements (shape " + t.shapeToString() + ") but " +
                     str(count) + " values were given");
  const Type type = t.elementType();
  const std::size_t size = typeSize(type), srcSize = typeSize(srcType);
  std::byte one[8];
  if (fill)
    convertElements(srcType, values, type, one, 1);
  // Each value goes straight to its place: ResNet-50's 71 M weights and
  // optimizer state are one run per variable, and a converted copy of all
  // of them first was fresh memory to touch.
  const auto *src = static_cast<const std::byte *>(values);
  std::size_t pos = 0;
  for (const Run &r : t.runs()) {
    VariableData &var = data_->variables[r.var];
    if (var.initialValue.empty())
      var.initialValue.resize(var.numElements * size);
    const auto n = static_cast<std::size_t>(r.count);
    std::byte *dst = var.initialValue.data();
    if (fill && r.stride == 1) {
      // Doubling copies: one call per power of two, not one per element.
      std::byte *p = dst + r.start * size;
      if (n > 0)
        std::memcpy(p, one, size);
      for (std::size_t have = 1; have < n; have += std::min(have, n - have))
        std::memcpy(p + have * size, p, std::min(have, n - have) * size);
    } else if (fill) {
      for (std::size_t i = 0; i < n; ++i)
        std::memcpy(dst + (r.start + std::int64_t(i) * r.stride) * size, one,
                    size);
    } else if (r.stride == 1) {
      convertElements(srcType, src + pos * srcSize, type, dst + r.start * size,
                      n);
    } else {
      for (std::size_t i = 0; i < n; ++i)
        convertElements(srcType, src + (pos + i) * srcSize, type,
                        dst + (r.start + std::int64_t(i) * r.stride) * size, 1);
    }
    pos += n;
  }
}

void Graph::setPerfEstimate(VertexRef v, std::uint64_t cycles) {
  vertexOf(v).perfEstimate = cycles;
}

void Graph::checkHandle(const std::string &handle, const char *what) const {
  if (handle.empty())
    throw GraphError(std::string(what) + ": the handle must not be empty");
  for (const auto &s : data_->streams)
    if (s.handle == handle)
      throw GraphError(std::string(what) + ": handle \"" + handle +
                       "\" is already used by a stream; pick another name");
  for (const auto &h : data_->hostAccesses)
    if (h.handle == handle)
      throw GraphError(std::string(what) + ": handle \"" + handle +
                       "\" is already used by a host read/write; pick "
                       "another name");
  for (const auto &b : data_->remoteBuffers)
    if (b.handle == handle)
      throw GraphError(std::string(what) + ": handle \"" + handle +
                       "\" is already used by a remote buffer; pick another "
                       "name");
}

DataStream Graph::addHostToDeviceFIFO(const std::string &handle, Type type,
                                      std::size_t numElements) {
  return addHostToDeviceFIFO(handle, type, numElements,
                             ReplicatedStreamMode::REPLICATE);
}

DataStream Graph::addHostToDeviceFIFO(const std::string &handle, Type type,
                                      std::size_t numElements,
                                      ReplicatedStreamMode mode) {
  checkHandle(handle, "addHostToDeviceFIFO");
  data_->streams.push_back({handle, type, numElements, true,
                            mode == ReplicatedStreamMode::BROADCAST});
  return DataStream(static_cast<unsigned>(data_->streams.size() - 1), handle,
                    type, numElements);
}

DataStream Graph::addDeviceToHostFIFO(const std::string &handle, Type type,
                                      std::size_t numElements) {
  checkHandle(handle, "addDeviceToHostFIFO");
  data_->streams.push_back({handle, type, numElements, false, false});
  return DataStream(static_cast<unsigned>(data_->streams.size() - 1), handle,
                    type, numElements);
}

void Graph::createHostWrite(const std::string &handle, const Tensor &t) {
  checkTensor(t, "createHostWrite");
  checkHandle(handle, "createHostWrite");
  data_->hostAccesses.push_back({handle, t, true});
}

void Graph::createHostRead(const std::string &handle, const Tensor &t) {
  checkTensor(t, "createHostRead");
  checkHandle(handle, "createHostRead");
  data_->hostAccesses.push_back({handle, t, false});
}

RemoteBuffer Graph::addRemoteBuffer(const std::string &handle, Type type,
                                    std::size_t numElements,
                                    std::size_t repeats) {
  checkHandle(handle, "addRemoteBuffer");
  if (numElements == 0 || repeats == 0)
    throw GraphError("addRemoteBuffer \"" + handle +
                     "\": numElements and repeats must be at least 1");
  data_->remoteBuffers.push_back({handle, type, numElements, repeats});
  return RemoteBuffer(static_cast<unsigned>(data_->remoteBuffers.size() - 1),
                      handle, type, numElements, repeats);
}

Function Graph::addFunction(const program::Program &program) {
  data_->functions.push_back(program);
  return Function(static_cast<unsigned>(data_->functions.size() - 1));
}

void Graph::addCodelets(const std::string &path,
                        const std::string &compileFlags) {
  data_->registry->addCodelets(path, compileFlags);
}

void Graph::addCodelets(const std::string &path, CodeletFileType type,
                        const std::string &compileFlags) {
  if (type != CodeletFileType::CppSource && type != CodeletFileType::CSource &&
      type != CodeletFileType::Auto)
    throw UnsupportedError("addCodelets \"" + path +
                           "\": the IPU Model runs codelets compiled from C "
                           "or C++ source; assembly and IPU object files "
                           "cannot run on the host");
  addCodelets(path, compileFlags);
}

void Graph::addCodeletSource(const std::string &source, const std::string &name,
                             const std::string &compileFlags) {
  data_->registry->addCodeletSource(source, name, compileFlags);
}

VertexRegistry &Graph::registry() { return *data_->registry; }

std::size_t Graph::getNumVertices() const { return data_->vertices.size(); }
std::size_t Graph::getNumVariables() const { return data_->variables.size(); }

std::string Graph::getDebugName(const Tensor &t) const {
  if (!t.valid() || t.runs().empty() ||
      t.runs()[0].var >= data_->variables.size())
    return "";
  return data_->variables[t.runs()[0].var].name;
}

void mapTensorLinearly(Graph &graph, const Tensor &t,
                       std::size_t minElementsPerTile, std::size_t grainSize) {
  const std::size_t n = t.numElements();
  const std::size_t tiles = graph.getTarget().getNumTiles();
  if (minElementsPerTile == 0 && grainSize <= 1) {
    // PopLibs' defaults: a grain of one vector, at least 128 bytes a tile.
    grainSize = graph.getTarget().getVectorWidth(t.elementType());
    minElementsPerTile = 128 / typeSize(t.elementType());
  }
  grainSize = std::max<std::size_t>(grainSize, 1);
  const std::size_t grains = (n + grainSize - 1) / grainSize;
  std::size_t perTile = (grains + tiles - 1) / tiles;
  perTile = std::max(perTile, (minElementsPerTile + grainSize - 1) / grainSize);
  perTile = std::max<std::size_t>(perTile, 1);
  const std::size_t chunk = perTile * grainSize;
  TileMapping m(tiles);
  for (std::size_t tile = 0, b = 0; b < n; ++tile, b += chunk)
    m[tile].emplace_back(b, std::min(n, b + chunk));
  graph.setTileMapping(t, m);
}

} // namespace tessera
