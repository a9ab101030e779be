// Extra keys for the run's JSON context. A plugin registers a provider while registering its cases;
// the host calls it once before the run, only when a GPU is usable (so it may query devices).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xfbench {

using ContextEntries = std::vector<std::pair<std::string, std::string>>;

void add_context_provider(std::function<ContextEntries()> provider);

}  // namespace xfbench
