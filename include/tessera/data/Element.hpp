/// \file
/// What a dataset yields: an Element is a tuple of HostTensor components
/// (features, label, ...), and an ElementSpec gives each component's name,
/// element type and shape. Every element a dataset yields matches its spec;
/// the pipeline checks this where user code produces elements (generators,
/// map functions) and says which component differs and how.
#pragma once

#include "tessera/data/HostTensor.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::data {

/// One component of an element. Shapes may use anyDim for a dimension that
/// varies between elements.
struct ComponentSpec {
  std::string name; ///< may be empty: the component is positional
  Type type = Type::FLOAT;
  Shape shape;

  /// Whether \p t has this type and a shape this one allows.
  bool matches(const HostTensor &t) const;
  bool operator==(const ComponentSpec &) const = default;
};

/// A tuple of components of fixed types and shapes.
struct Element {
  std::vector<HostTensor> components;

  Element() = default;
  explicit Element(std::vector<HostTensor> c) : components(std::move(c)) {}
  Element(std::initializer_list<HostTensor> c) : components(c) {}

  std::size_t size() const { return components.size(); }
  HostTensor &operator[](std::size_t i) { return components[i]; }
  const HostTensor &operator[](std::size_t i) const { return components[i]; }
  /// Bytes of every component together.
  std::size_t numBytes() const;
  bool operator==(const Element &) const = default;
};

/// The names, types and shapes of an element's components.
class ElementSpec {
public:
  ElementSpec() = default;
  explicit ElementSpec(std::vector<ComponentSpec> components)
      : components_(std::move(components)) {}
  ElementSpec(std::initializer_list<ComponentSpec> components)
      : components_(components) {}
  /// The spec of \p element, its components named by \p names (none, or
  /// one per component).
  static ElementSpec of(const Element &element,
                        const std::vector<std::string> &names = {});

  std::size_t size() const { return components_.size(); }
  const ComponentSpec &operator[](std::size_t i) const {
    return components_[i];
  }
  const std::vector<ComponentSpec> &components() const { return components_; }

  /// The index of the component called \p name; an OptionError lists the
  /// names there are.
  std::size_t indexOf(std::string_view name) const;
  /// How messages name component \p i: `component 1 ("label")`.
  std::string describe(std::size_t i) const;
  /// "(image: float [28,28,1], label: int [])".
  std::string toString() const;

  /// Whether \p element has this spec's component count, types and shapes.
  bool matches(const Element &element) const;
  /// Throws unless \p element matches this spec: a ShapeError for a wrong
  /// component count or shape, a TypeError for a wrong element type. The
  /// message starts with \p context ("map", "fromGenerator: element 3").
  void check(const Element &element, const std::string &context) const;

  /// Throws unless elements of this spec can feed a consumer that requires
  /// \p required (the same component count, types and shapes; a dimension
  /// of anyDim here only fits anyDim there). The message starts with
  /// \p context and says how to fix the dataset.
  void checkFeeds(const ElementSpec &required,
                  const std::string &context) const;

  bool operator==(const ElementSpec &) const = default;

private:
  std::vector<ComponentSpec> components_;
};

/// How many elements a dataset yields: a known count, infinitely many, or
/// not known before iterating (generators, repeats of those).
class Cardinality {
public:
  static Cardinality finite(std::uint64_t count) {
    return Cardinality(Kind::Finite, count);
  }
  static Cardinality infinite() { return Cardinality(Kind::Infinite, 0); }
  static Cardinality unknown() { return Cardinality(Kind::Unknown, 0); }

  bool isFinite() const { return kind_ == Kind::Finite; }
  bool isInfinite() const { return kind_ == Kind::Infinite; }
  bool isUnknown() const { return kind_ == Kind::Unknown; }
  /// The count of a finite dataset; an Error for the other kinds.
  std::uint64_t count() const;
  /// "60000", "infinite" or "unknown".
  std::string toString() const;
  bool operator==(const Cardinality &) const = default;

private:
  enum class Kind : std::uint8_t { Finite, Infinite, Unknown };
  Cardinality(Kind kind, std::uint64_t count) : kind_(kind), count_(count) {}
  Kind kind_;
  std::uint64_t count_;
};

} // namespace tessera::data
