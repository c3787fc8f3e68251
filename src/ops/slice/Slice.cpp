// The slicing ops: checks, the [rows, columns] views of the operands, and
// one compute set of one MultiVertex per column run (SlicePlan.cpp).
#include "tessera/ops/DynamicSlice.hpp"

#include "OpsInternal.hpp"
#include "SliceInternal.hpp"

#include "tessera/ops/Elementwise.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <algorithm>
#include <string>

namespace tessera::ops {
namespace {

std::string str(std::size_t v) { return std::to_string(v); }

DebugContext nameOr(const DebugContext &dc, const char *name) {
  return dc.name.empty() ? DebugContext(name) : dc;
}

// What one slicing op does: its operands seen as [rows, columns].
struct SliceJob {
  const char *op = "";
  Tensor t2;      // the sliced tensor, [rows, cols]
  Tensor offsets; // flattened, numIndices x numDims
  std::vector<unsigned> baseShape, sliceShape;
  std::size_t outRows = 0; // numIndices x product of the sizes
  bool clamp = false;
};

void checkTensor(const char *op, const char *what, const Tensor &t) {
  if (!t.valid() || t.numElements() == 0)
    throw ShapeError(
        std::string(op) + ": the " + what + " has no elements (shape " +
        (t.valid() ? t.shapeToString() : std::string("none")) + ")");
}

void checkDataType(const char *op, const Tensor &t) {
  const Type type = t.elementType();
  if (type != FLOAT && type != HALF && type != INT && type != UNSIGNED_INT &&
      type != BOOL)
    throw TypeError(std::string(op) + ": the tensor has type " +
                    std::string(typeName(type)) +
                    "; slicing supports float, half, int, unsigned int and "
                    "bool (cast first)");
}

void checkOffsetType(const char *op, const Tensor &offsets) {
  if (offsets.elementType() != UNSIGNED_INT)
    throw TypeError(std::string(op) + ": the offset tensor has type " +
                    std::string(typeName(offsets.elementType())) +
                    "; it must be unsigned int (cast it with ops::cast)");
}

void parseOptions(const char *op, const OptionFlags &options) {
  OptionParser parser(op);
  const char *why = "one plan (a column per tile) serves every slice and "
                    "update";
  for (const char *key : {"availableMemoryProportion", "planConstraints",
                          "operationForUpdate", "partialType"})
    parser.addIgnored(key, why);
  for (const char *key : {"indicesAreSorted", "usedForSlice", "usedForUpdate"})
    parser.addIgnored(key, why, {"true", "false"});
  parser.parse(options);
}

// The common start of every op: checks, and t as [rows, cols].
SliceJob makeJob(const char *op, const Tensor &t, const Tensor &offsets,
                 const std::vector<std::size_t> &dims,
                 const std::vector<std::size_t> &sizes,
                 const OptionFlags &options) {
  parseOptions(op, options);
  checkTensor(op, "sliced tensor", t);
  checkDataType(op, t);
  checkSliceDims(op, t.shape(), dims, sizes);
  checkTensor(op, "offset tensor", offsets);
  checkOffsetType(op, offsets);
  SliceJob job;
  job.op = op;
  std::size_t rows = 1, per = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    job.baseShape.push_back(static_cast<unsigned>(t.dim(dims[k])));
    job.sliceShape.push_back(static_cast<unsigned>(sizes[k]));
    rows *= t.dim(dims[k]);
    per *= sizes[k];
  }
  job.t2 = t.dimShuffle(slicedFirst(t.rank(), dims))
               .reshape({rows, t.numElements() / rows});
  job.offsets = offsets.flatten();
  job.outRows = per * (offsets.numElements() / dims.size());
  return job;
}

// Checks a dynamicSlice offset: one element per sliced dimension.
void checkDynamicOffset(const char *op, const Tensor &offset,
                        std::size_t numDims) {
  if (offset.rank() > 1 || offset.numElements() != numDims)
    throw ShapeError(std::string(op) + ": the offset tensor has shape " +
                     offset.shapeToString() + " but " + str(numDims) +
                     " dimension(s) are sliced; give one offset per "
                     "dimension in dims, shape [" +
                     str(numDims) + "]");
}

// Checks multiSlice offsets: [M, numDims], or [M] for one dimension.
void checkMultiOffsets(const char *op, const Tensor &offsets,
                       std::size_t numDims) {
  const bool ok = (offsets.rank() == 1 && numDims == 1) ||
                  (offsets.rank() == 2 && offsets.dim(1) == numDims);
  if (!ok)
    throw ShapeError(std::string(op) + ": the offsets tensor has shape " +
                     offsets.shapeToString() + "; with " + str(numDims) +
                     " sliced dimension(s) it must be [M, " + str(numDims) +
                     "]" + (numDims == 1 ? " or [M]" : "") +
                     ", one row of offsets per slice");
}

// The view of a block of columns in the order that needs the fewest
// copies: column-major when that is contiguous (a sliceable layout) or
// has no more runs than row-major.
std::pair<Tensor, bool> columnBlock(const Tensor &x2, const ColumnRun &r) {
  const Tensor block = x2.slice(r.begin, r.end, 1);
  Tensor colMajor = block.transpose().flatten();
  if (colMajor.isContiguous())
    return {colMajor, true};
  Tensor rowMajor = block.flatten();
  if (rowMajor.isContiguous() ||
      rowMajor.runs().size() < colMajor.runs().size())
    return {rowMajor, false};
  return {colMajor, true};
}

void setCommonFields(Graph &graph, VertexRef v, const SliceJob &job,
                     bool baseColumnMajor) {
  graph.connect(v["offsets"], job.offsets);
  graph.setInitialValue(v["baseShape"], job.baseShape);
  graph.setInitialValue(v["sliceShape"], job.sliceShape);
  graph.setInitialValue(v["baseColumnMajor"],
                        static_cast<unsigned>(baseColumnMajor));
  graph.setInitialValue(v["clamp"], static_cast<unsigned>(job.clamp));
}

// The slice as a [outRows, cols] tensor: one vertex per column run writing
// the run's block of a new variable on the run's tile.
Tensor sliceImpl(Graph &graph, const SliceJob &job, Sequence &prog,
                 const DebugContext &dc) {
  const Type type = job.t2.elementType();
  const std::size_t cols = job.t2.dim(1);
  const std::vector<ColumnRun> runs = planColumns(graph, job.t2);
  // One run over all columns stored row-major (a tensor on one tile) gives
  // a row-major result; otherwise each run's block is column-major.
  bool rowMajorOut = false;
  if (runs.size() == 1)
    rowMajorOut = !columnBlock(job.t2, runs[0]).second;
  Tensor var = graph.addVariable(
      type,
      rowMajorOut ? std::vector<std::size_t>{job.outRows, cols}
                  : std::vector<std::size_t>{cols, job.outRows},
      DebugContext(dc, "out"));
  Tensor out2 = rowMajorOut ? var : var.transpose();
  ComputeSet cs = graph.addComputeSet(dc);
  const std::string cls = templateName("tessera::ops::MultiSlice", {type});
  for (const ColumnRun &r : runs) {
    const auto [base, colMajor] = columnBlock(job.t2, r);
    const Tensor outBlock =
        rowMajorOut ? var : var.slice(r.begin, r.end).flatten();
    graph.setTileMapping(outBlock, r.tile);
    VertexRef v = graph.addVertex(cs, cls);
    setCommonFields(graph, v, job, colMajor);
    graph.connect(v["base"], base);
    graph.connect(v["out"], outBlock);
    graph.setInitialValue(v["outColumnMajor"],
                          static_cast<unsigned>(!rowMajorOut));
    graph.setTileMapping(v, r.tile);
  }
  prog.add(program::Execute(cs, dc));
  return out2;
}

// Writes (or adds) s2 ([outRows, cols]) into the rows of t2 the offsets
// pick: one vertex per column run, updating the run's block in place.
void updateImpl(Graph &graph, const SliceJob &job, const Tensor &s2,
                const Tensor *scale, Sequence &prog, const DebugContext &dc) {
  const Type type = job.t2.elementType();
  const std::vector<ColumnRun> runs = planColumns(graph, job.t2);
  ComputeSet cs = graph.addComputeSet(dc);
  const std::string cls = templateName(scale ? "tessera::ops::MultiUpdateAdd"
                                             : "tessera::ops::MultiUpdate",
                                       {type});
  for (const ColumnRun &r : runs) {
    const auto [base, baseColMajor] = columnBlock(job.t2, r);
    const auto [sub, subColMajor] = columnBlock(s2, r);
    VertexRef v = graph.addVertex(cs, cls);
    setCommonFields(graph, v, job, baseColMajor);
    graph.connect(v["base"], base);
    graph.connect(v["sub"], sub);
    graph.setInitialValue(v["subColumnMajor"],
                          static_cast<unsigned>(subColMajor));
    if (scale)
      graph.connect(v["scale"], *scale);
    graph.setTileMapping(v, r.tile);
  }
  prog.add(program::Execute(cs, dc));
}

// The shape a result in sliced-first order [M?, sizes..., others...] goes
// back to, and the permutation that takes it there.
Tensor unpermute(const Tensor &out2, const Tensor &t,
                 const std::vector<std::size_t> &dims,
                 const std::vector<std::size_t> &sizes, bool leadingIndex,
                 std::size_t numIndices) {
  const std::vector<unsigned> perm = slicedFirst(t.rank(), dims);
  std::vector<std::size_t> rolled;
  if (leadingIndex)
    rolled.push_back(numIndices);
  for (std::size_t k = 0; k < perm.size(); ++k)
    rolled.push_back(k < dims.size() ? sizes[k] : t.dim(perm[k]));
  const unsigned lead = leadingIndex ? 1 : 0;
  std::vector<unsigned> back(t.rank() + lead);
  for (unsigned k = 0; k < perm.size(); ++k)
    back[lead + perm[k]] = lead + k;
  return out2.reshape(rolled).dimShuffle(back);
}

// The shape s must have: the result shape of the matching slice.
std::vector<std::size_t> sliceShapeOf(const Tensor &t,
                                      const std::vector<std::size_t> &dims,
                                      const std::vector<std::size_t> &sizes) {
  std::vector<std::size_t> shape = t.shape();
  for (std::size_t k = 0; k < dims.size(); ++k)
    shape[dims[k]] = sizes[k];
  return shape;
}

// s as [outRows, cols] in the job's row order, after checking its shape
// and type; `leadingIndex` for the multi ops' [M, ...] form, where sliced
// dimensions of size 1 may be left out.
Tensor updateSource(const SliceJob &job, const Tensor &t, const Tensor &s,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, bool leadingIndex,
                    std::size_t numIndices) {
  checkTensor(job.op, "update tensor", s);
  if (s.elementType() != t.elementType())
    throw TypeError(
        std::string(job.op) + ": the update has type " +
        std::string(typeName(s.elementType())) + " but the tensor has type " +
        std::string(typeName(t.elementType())) + "; they must be equal");
  std::vector<std::size_t> full = sliceShapeOf(t, dims, sizes);
  std::vector<std::size_t> squeezed;
  for (std::size_t d = 0; d < full.size(); ++d)
    if (!(leadingIndex && full[d] == 1 &&
          std::find(dims.begin(), dims.end(), d) != dims.end()))
      squeezed.push_back(full[d]);
  if (leadingIndex) {
    full.insert(full.begin(), numIndices);
    squeezed.insert(squeezed.begin(), numIndices);
  }
  if (s.shape() != full && s.shape() != squeezed)
    throw ShapeError(std::string(job.op) + ": the update has shape " +
                     s.shapeToString() + " but it must be " +
                     shapeString(full) +
                     (squeezed != full ? " (or " + shapeString(squeezed) + ")"
                                       : std::string()) +
                     ", the shape of the matching slice");
  const Tensor sFull = s.reshape(full);
  std::vector<unsigned> perm = slicedFirst(t.rank(), dims);
  if (leadingIndex) {
    for (unsigned &p : perm)
      ++p;
    perm.insert(perm.begin(), 0u);
  }
  return sFull.dimShuffle(perm).reshape({job.outRows, job.t2.dim(1)});
}

} // namespace

Tensor dynamicSlice(Graph &graph, const Tensor &t, const Tensor &offset,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, Sequence &prog,
                    const DebugContext &dc, const OptionFlags &options) {
  const char *op = "dynamicSlice";
  SliceJob job = makeJob(op, t, offset, dims, sizes, options);
  checkDynamicOffset(op, offset, dims.size());
  job.clamp = true;
  const Tensor out2 = sliceImpl(graph, job, prog, nameOr(dc, op));
  return unpermute(out2, t, dims, sizes, false, 1);
}

void dynamicUpdate(Graph &graph, const Tensor &t, const Tensor &s,
                   const Tensor &offset, const std::vector<std::size_t> &dims,
                   const std::vector<std::size_t> &sizes, Sequence &prog,
                   const DebugContext &dc, const OptionFlags &options) {
  const char *op = "dynamicUpdate";
  SliceJob job = makeJob(op, t, offset, dims, sizes, options);
  checkDynamicOffset(op, offset, dims.size());
  job.clamp = true;
  const Tensor s2 = updateSource(job, t, s, dims, sizes, false, 1);
  updateImpl(graph, job, s2, nullptr, prog, nameOr(dc, op));
}

Tensor multiSlice(Graph &graph, const Tensor &t, const Tensor &offsets,
                  const std::vector<std::size_t> &dims,
                  const std::vector<std::size_t> &sizes, Sequence &prog,
                  const DebugContext &dc, const OptionFlags &options) {
  const char *op = "multiSlice";
  SliceJob job = makeJob(op, t, offsets, dims, sizes, options);
  checkMultiOffsets(op, offsets, dims.size());
  const Tensor out2 = sliceImpl(graph, job, prog, nameOr(dc, op));
  return unpermute(out2, t, dims, sizes, true, offsets.dim(0));
}

Tensor multiSlice(Graph &graph, const Tensor &t, const Tensor &offsets,
                  std::size_t dim, std::size_t size, Sequence &prog,
                  const DebugContext &dc, const OptionFlags &options) {
  return multiSlice(graph, t, offsets, std::vector<std::size_t>{dim},
                    std::vector<std::size_t>{size}, prog, dc, options);
}

void multiUpdate(Graph &graph, const Tensor &t, const Tensor &s,
                 const Tensor &offsets, const std::vector<std::size_t> &dims,
                 const std::vector<std::size_t> &sizes, Sequence &prog,
                 const DebugContext &dc, const OptionFlags &options) {
  const char *op = "multiUpdate";
  SliceJob job = makeJob(op, t, offsets, dims, sizes, options);
  checkMultiOffsets(op, offsets, dims.size());
  const Tensor s2 = updateSource(job, t, s, dims, sizes, true, offsets.dim(0));
  updateImpl(graph, job, s2, nullptr, prog, nameOr(dc, op));
}

void multiUpdate(Graph &graph, const Tensor &t, const Tensor &s,
                 const Tensor &offsets, std::size_t dim, std::size_t size,
                 Sequence &prog, const DebugContext &dc,
                 const OptionFlags &options) {
  multiUpdate(graph, t, s, offsets, std::vector<std::size_t>{dim},
              std::vector<std::size_t>{size}, prog, dc, options);
}

void multiUpdateAdd(Graph &graph, const Tensor &t, const Tensor &s,
                    const Tensor &offsets, const Tensor &scale,
                    const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, Sequence &prog,
                    const DebugContext &dc, const OptionFlags &options) {
  const char *op = "multiUpdateAdd";
  SliceJob job = makeJob(op, t, offsets, dims, sizes, options);
  checkMultiOffsets(op, offsets, dims.size());
  if (t.elementType() != FLOAT && t.elementType() != HALF)
    throw TypeError("multiUpdateAdd: the tensor has type " +
                    std::string(typeName(t.elementType())) +
                    "; multiUpdateAdd supports float and half");
  if (!scale.valid() || scale.numElements() != 1)
    throw ShapeError(
        "multiUpdateAdd: the scale has shape " +
        (scale.valid() ? scale.shapeToString() : std::string("none")) +
        "; it must be a tensor of one element");
  if (scale.elementType() != FLOAT && scale.elementType() != HALF)
    throw TypeError("multiUpdateAdd: the scale has type " +
                    std::string(typeName(scale.elementType())) +
                    "; it must be float (or half)");
  const Tensor s2 = updateSource(job, t, s, dims, sizes, true, offsets.dim(0));
  const DebugContext name = nameOr(dc, op);
  Tensor scaleF = scale.flatten();
  if (scale.elementType() == HALF)
    scaleF = cast(graph, scaleF, FLOAT, prog, DebugContext(name, "scale"));
  updateImpl(graph, job, s2, &scaleF, prog, name);
}

void multiUpdateAdd(Graph &graph, const Tensor &t, const Tensor &s,
                    const Tensor &offsets, const Tensor &scale, std::size_t dim,
                    std::size_t size, Sequence &prog, const DebugContext &dc,
                    const OptionFlags &options) {
  multiUpdateAdd(graph, t, s, offsets, scale, std::vector<std::size_t>{dim},
                 std::vector<std::size_t>{size}, prog, dc, options);
}

} // namespace tessera::ops
