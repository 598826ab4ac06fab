// The registered importers; ties go to the one listed first.
#include "core/import/importer.h"

#include <array>

namespace strata {

std::span<const Importer* const> importers() {
  static const std::array<const Importer*, 4> all = {&kTorchNpuImporter, &kAutogradLegacyImporter, &kTensorBoard2021Importer,
                                                     &kKinetoImporter};
  return all;
}

const Importer* importer_for(std::string_view head) {
  const Importer* best = nullptr;
  int best_score = 0;
  for (const Importer* i : importers())
    if (int s = i->sniff(head); s > best_score) best = i, best_score = s;
  return best;
}

}  // namespace strata
