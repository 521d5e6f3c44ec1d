// Lists of named things (the synthetic model presets): the names in order, and the lookup whose
// error names every known entry, so each list's messages read alike.
#pragma once

#include <string>
#include <vector>

namespace dv {

// The `name` members of `items`, in order.
template <typename T>
std::vector<std::string> NamesOf(const std::vector<T>& items) {
  std::vector<std::string> names;
  names.reserve(items.size());
  for (const T& item : items) names.push_back(item.name);
  return names;
}

// The item called `name`; else throws Error("unknown <what> '<name>' (known: a, b, c)").
template <typename Error, typename T>
const T& FindNamed(const std::vector<T>& items, const std::string& name, const std::string& what) {
  for (const T& item : items) {
    if (item.name == name) return item;
  }
  std::string known;
  for (const T& item : items) known += (known.empty() ? "" : ", ") + item.name;
  throw Error("unknown " + what + " '" + name + "' (known: " + known + ")");
}

}  // namespace dv
