#include "tessera/data/Element.hpp"

namespace tessera::data {
namespace {

bool shapeFits(const Shape &spec, const Shape &actual) {
  if (spec.size() != actual.size())
    return false;
  for (std::size_t d = 0; d < spec.size(); ++d)
    if (spec[d] != anyDim && spec[d] != actual[d])
      return false;
  return true;
}

} // namespace

bool ComponentSpec::matches(const HostTensor &t) const {
  return t.type() == type && shapeFits(shape, t.shape());
}

std::size_t Element::numBytes() const {
  std::size_t n = 0;
  for (const HostTensor &c : components)
    n += c.numBytes();
  return n;
}

ElementSpec ElementSpec::of(const Element &element,
                            const std::vector<std::string> &names) {
  if (!names.empty() && names.size() != element.size())
    throw ShapeError("ElementSpec: " + std::to_string(names.size()) +
                     " names were given for an element of " +
                     std::to_string(element.size()) +
                     " components; give one name per component or none");
  std::vector<ComponentSpec> components;
  for (std::size_t i = 0; i < element.size(); ++i)
    components.push_back({names.empty() ? std::string() : names[i],
                          element[i].type(), element[i].shape()});
  return ElementSpec(std::move(components));
}

std::size_t ElementSpec::indexOf(std::string_view name) const {
  std::string known;
  for (std::size_t i = 0; i < components_.size(); ++i) {
    if (components_[i].name == name)
      return i;
    if (!components_[i].name.empty())
      known += (known.empty() ? "\"" : ", \"") + components_[i].name + "\"";
  }
  throw OptionError("the dataset has no component named \"" +
                    std::string(name) + "\"; " +
                    (known.empty() ? "its components have no names"
                                   : "its components are " + known));
}

std::string ElementSpec::describe(std::size_t i) const {
  std::string s = "component " + std::to_string(i);
  if (i < components_.size() && !components_[i].name.empty())
    s += " (\"" + components_[i].name + "\")";
  return s;
}

std::string ElementSpec::toString() const {
  std::string s = "(";
  for (std::size_t i = 0; i < components_.size(); ++i) {
    if (i)
      s += ", ";
    if (!components_[i].name.empty())
      s += components_[i].name + ": ";
    s += typeAndShapeString(components_[i].type, components_[i].shape);
  }
  return s + ")";
}

bool ElementSpec::matches(const Element &element) const {
  if (element.size() != size())
    return false;
  for (std::size_t i = 0; i < size(); ++i)
    if (!components_[i].matches(element[i]))
      return false;
  return true;
}

void ElementSpec::check(const Element &element,
                        const std::string &context) const {
  if (element.size() != size())
    throw ShapeError(context + ": the element has " +
                     std::to_string(element.size()) +
                     " components but the dataset declares " +
                     std::to_string(size()) + " " + toString());
  for (std::size_t i = 0; i < size(); ++i) {
    const ComponentSpec &c = components_[i];
    const HostTensor &t = element[i];
    if (t.type() != c.type)
      throw TypeError(context + ": " + describe(i) + " is " +
                      typeAndShapeString(t.type(), t.shape()) +
                      " but the dataset declares " +
                      typeAndShapeString(c.type, c.shape) + "; produce " +
                      std::string(typeName(c.type)) +
                      " elements (HostTensor::cast) or declare " +
                      std::string(typeName(t.type())));
    if (!shapeFits(c.shape, t.shape()))
      throw ShapeError(context + ": " + describe(i) + " has shape " +
                       shapeString(t.shape()) + " but the dataset declares " +
                       shapeString(c.shape) + "; produce that shape " +
                       "(HostTensor::reshaped) or declare " +
                       shapeString(t.shape()));
  }
}

void ElementSpec::checkFeeds(const ElementSpec &required,
                             const std::string &context) const {
  if (size() != required.size())
    throw ShapeError(context + ": the dataset's elements have " +
                     std::to_string(size()) + " components " + toString() +
                     " but " + std::to_string(required.size()) +
                     " are required " + required.toString() +
                     "; map the dataset to the required components");
  for (std::size_t i = 0; i < size(); ++i) {
    const ComponentSpec &have = components_[i], &want = required[i];
    if (have.type != want.type)
      throw TypeError(context + ": the dataset's " + describe(i) + " is " +
                      typeAndShapeString(have.type, have.shape) + " but " +
                      typeAndShapeString(want.type, want.shape) +
                      " is required; convert it with Dataset::cast(" +
                      std::to_string(i) + ", " +
                      std::string(typeName(want.type)) + ")");
    bool fits = have.shape.size() == want.shape.size();
    for (std::size_t d = 0; fits && d < have.shape.size(); ++d)
      fits = want.shape[d] == anyDim || have.shape[d] == want.shape[d];
    if (!fits)
      throw ShapeError(
          context + ": the dataset's " + describe(i) + " has shape " +
          shapeString(have.shape) + " but " + shapeString(want.shape) +
          " is required" +
          (!have.shape.empty() && have.shape[0] == anyDim
               ? "; batch with dropRemainder = true so every batch has the "
                 "same size"
               : "; reshape or batch the dataset to that shape"));
  }
}

std::uint64_t Cardinality::count() const {
  if (kind_ != Kind::Finite)
    throw Error("the dataset's cardinality is " + toString() +
                ", so it has no element count; check isFinite() first");
  return count_;
}

std::string Cardinality::toString() const {
  switch (kind_) {
  case Kind::Finite:
    return std::to_string(count_);
  case Kind::Infinite:
    return "infinite";
  case Kind::Unknown:
    break;
  }
  return "unknown";
}

} // namespace tessera::data
