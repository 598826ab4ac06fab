// What the program said about its own structure, by name: PyTorch's markers (ProfilerStep#,
// enumerate(DataLoader)#, Optimizer.step#, nn.Module frames) and the names people give their
// ranges (record_function, NVTX): which phase a name says, which ranges are steps, and the
// label a range keeps on the timeline. The one place these spellings are known.
#pragma once

#include "core/annotate/annotation.h"

#include <optional>
#include <string>
#include <string_view>

namespace strata {

inline constexpr std::string_view kModuleFramePrefix = "nn.Module: ";
inline bool is_dataloader_marker(std::string_view n) { return n.starts_with("enumerate(DataLoader)#"); }
inline bool is_optimizer_step_marker(std::string_view n) { return n.starts_with("Optimizer.step#"); }
inline bool is_zero_grad_marker(std::string_view n) { return n.starts_with("Optimizer.zero_grad#"); }
// ProfilerStep#, enumerate(DataLoader)#, Optimizer.*#: ranges PyTorch writes, not the program.
bool is_pytorch_marker(std::string_view n);
// An nn.Module python frame ("nn.Module: Linear_3"), and its module ("Linear_3").
inline bool is_module_frame_name(std::string_view n) { return n.starts_with(kModuleFramePrefix); }
inline std::string_view module_of_frame(std::string_view n) {
  return is_module_frame_name(n) ? n.substr(kModuleFramePrefix.size()) : n;
}
// "Linear_3" → "Linear"; "CrossEntropyLoss" → "CrossEntropyLoss".
std::string_view module_class(std::string_view module);
// A module whose class is a loss ("MSELoss_0", "CrossEntropyLoss").
bool is_loss_module(std::string_view module);

// A range the program named as one iteration: "iteration", "Iteration 12", "train_step".
bool names_iteration(std::string_view n);
// A serving engine's or a loop's step: SGLang's "step[EXTEND bs=15 …]", vLLM's
// "execute_model", "execute_context_1(…)_generation_0(0)".
bool names_engine_step(std::string_view n);
// What a serving step runs, from its name: "Prefill", "Decode", "Prefill + decode", or "".
std::string serving_stage(std::string_view n);

// What a range's name says. `phase` is set when the name says a phase (the words forward,
// backward, loss, optimizer, zero_grad, data loading, or a pipeline chunk's (F), (B), (W));
// `label` is what the timeline shows for the range's time: the name itself, cleaned
// ("## sparse_data_dist ##" → "sparse_data_dist"), unless it says no more than its phase
// ("## forward ##", "backward") or PyTorch wrote it (those show the phase's own name).
struct RangeName {
  std::optional<PhaseKind> phase;
  bool pytorch = false;  // one of PyTorch's own markers
  bool weight_grad = false;  // a pipeline chunk computing weight gradients, "(W)"
  std::string label;
};
RangeName read_range_name(std::string_view n);
// A host-side collective: c10d's and the process groups' calls ("c10d::allreduce_",
// "nccl:all_reduce", "gloo:send", "record_param_comms").
bool is_host_collective(std::string_view n);
// "## sparse_data_dist ##" → "sparse_data_dist".
std::string_view clean_range_name(std::string_view n);

}  // namespace strata
