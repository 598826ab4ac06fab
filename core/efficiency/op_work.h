// The work of one CPU op from its recorded inputs (`record_shapes`: Input Dims, Input type,
// Concrete Inputs): floating-point operations and bytes moved to and from device memory, the
// model TraceLens and the roofline literature use (docs/efficiency.md). Ops this file does not
// know, and known ops whose shapes were not recorded, say so: their work is never guessed.
#pragma once

#include "core/event_args.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace strata {

// What a kernel does, as the efficiency figures group kernels.
enum class KernelClass : uint8_t { Gemm, Conv, Attention, Elementwise, Reduction, Norm, Communication, Copy, Other, Count };
const char* kernel_class_name(KernelClass c);  // "gemm", "conv", … (also the JSON spelling)

// The number format an op computes in, as the roofline's peaks tell them apart.
enum class Precision : uint8_t { Unknown, FP64, FP32, FP16, BF16, FP8, Integer };
const char* precision_name(Precision p);  // "fp32", "bf16", …

// Bytes per element of a recorded "Input type" ("float" 4, "c10::BFloat16" 2, "long int" 8);
// 0 for what is not a tensor's element type ("Scalar", "TensorList", "").
int dtype_size(std::string_view type);
Precision dtype_precision(std::string_view type);

enum class WorkModel : uint8_t {
  Modelled,  // flops and bytes below
  NoShapes,  // a known op whose inputs were not recorded (or not enough of them)
  Unknown,   // an op this model does not know
};

struct OpWork {
  WorkModel model = WorkModel::Unknown;
  KernelClass cls = KernelClass::Other;
  Precision precision = Precision::Unknown;  // the narrowest floating-point input: what the math ran in
  double flops = 0, bytes = 0;
  // Of `bytes`, the reads of an input that has the shape and type of another: the same tensor
  // read twice (`x != x`) is read once, which a trace cannot tell.
  double same_input_bytes = 0;
  double read_bytes = 0;  // of `bytes`, its inputs': what a cache may have held
  // Part of it assumed, not read from the trace (the text says what: a TensorList's element
  // type, a convolution's output mask); null when it all came from the trace.
  const char* assumption = nullptr;
};

// The work of one call of op `name` (as the trace names it: "aten::addmm") with these inputs.
// `output_hint`: the shape of the op's output where the trace shows it elsewhere (a convolution
// recorded without its stride and padding: the next op's input), else empty.
OpWork op_work(std::string_view name, const std::vector<OpInput>& inputs, const std::vector<int64_t>& output_hint = {});
// What op_work would say of the op's kind without its inputs: Unknown, or its class.
bool has_work_model(std::string_view name);
KernelClass op_class(std::string_view name);
// A convolution forward that needs an output hint when its Concrete Inputs are absent.
bool is_convolution_forward(std::string_view name);

}  // namespace strata
