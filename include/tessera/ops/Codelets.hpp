/// \file
/// The ops library's built-in vertices. addCodelets(graph) makes them
/// available to a graph (PopLibs' popops::addCodelets and friends); it also
/// registers the library process-wide so that an engine can load a saved
/// executable that uses them.
#pragma once

namespace tessera {
class Graph;
class VertexRegistry;
} // namespace tessera

namespace tessera {
namespace ops {

/// Adds every built-in vertex of the ops library to \p graph. Idempotent.
void addCodelets(Graph &graph);

/// Adds the built-in vertices to a registry.
void registerVertices(VertexRegistry &registry);

} // namespace ops
} // namespace tessera
