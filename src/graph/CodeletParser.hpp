/// \file
/// Finds the vertex classes of a user codelet file and their field names,
/// without a C++ front end: the field types are left to the C++ compiler,
/// which sees them through the generated registration code (CodeletShim).
///
/// A vertex class is a class or struct that derives publicly from Vertex or
/// MultiVertex (written plain or qualified poplar:: / tessera::), or from a
/// vertex class defined earlier in the same file. It may sit in namespaces
/// ("ns::Name"). Its fields are its public non-static data members in
/// declaration order, after those of a vertex base class. Class templates
/// become vertex classes through explicit instantiations
/// (`template class Foo<float>;` registers "Foo<float>") and explicit
/// specialisations (`template <> class Foo<int> : public Vertex {...}`).
///
/// Not seen: classes made by macros, vertex classes nested in other classes,
/// and template arguments that name types of the enclosing namespace without
/// qualification (the registration code names them from the global scope).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::detail {

/// One vertex class found in a codelet file.
struct ParsedVertexClass {
  /// The name the class is registered under: "SumVertex", "ns::Sum",
  /// "Foo<float>" (spelt as tessera::normalizeVertexName spells it).
  std::string name;
  /// How the registration code names the type: "::ns::Sum".
  std::string cppName;
  /// Data member names in declaration order, inherited ones first.
  std::vector<std::string> fields;
  /// Line of the class head (or of the explicit instantiation).
  unsigned line = 0;
};

/// Parses \p source; \p displayName is used in error messages.
/// Throws CodeletError for a vertex field declared non-public, for a
/// vertex class that derives from Vertex non-publicly and for namespaces
/// (or extern blocks) nested more than 256 deep. Returns the classes
/// in order of appearance, each name once; an empty list if there are none.
std::vector<ParsedVertexClass> parseCodeletSource(std::string_view source,
                                                  std::string_view displayName);

} // namespace tessera::detail
