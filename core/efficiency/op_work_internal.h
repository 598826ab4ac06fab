// Shared by the op work models (op_work.cpp: dispatch, pointwise and reduction models;
// op_matrix_work.cpp: matrix products, convolutions, attention). Not part of the public API.
#pragma once

#include "core/efficiency/op_work.h"

#include <string_view>
#include <vector>

namespace strata::opwork {

using Shape = std::vector<int64_t>;
using Inputs = std::vector<OpInput>;

// What a model needs of its table entry: argument positions (-1: none) and a constant.
struct Spec {
  int p[6] = {-1, -1, -1, -1, -1, -1};
  double k = 1;  // FLOPs per element, where the model counts so
};

double numel(const Shape& s);
// Input k is one tensor: an element type and one shape.
bool is_tensor(const Inputs& in, int k);
const Shape& shape(const Inputs& in, int k);  // is_tensor(in, k) must hold
int elem_size(const Inputs& in, int k);       // 0 when not a tensor
double tensor_bytes(const Inputs& in, int k); // 0 when not a tensor
double input_bytes(const Inputs& in);         // every tensor input's bytes (TensorLists not included)
// The narrowest floating-point element type among the tensor inputs (Unknown without one).
Precision narrowest_float(const Inputs& in);

// Concrete Inputs: an integer list ("[1, 1]") or one integer ("2"); false when neither.
bool int_list(std::string_view value, Shape& out);
// "True" 1, "False" 0, anything else -1.
int bool_value(std::string_view value);
// A list of booleans ("[True, True, False]"); empty when the value is not one.
std::vector<bool> bool_list(std::string_view value);
// The element size of a ScalarType code as Concrete Inputs write a dtype ("15": bfloat16);
// 0 when unknown.
int scalar_type_size(std::string_view code);

// The models (op_matrix_work.cpp). `w` arrives with its class set; each fills model, flops,
// bytes and precision.
void gemm_work(const Inputs& in, const Spec& s, OpWork& w);    // p: a, b, -, output dtype
void linear_work(const Inputs& in, const Spec& s, OpWork& w);  // input, weight
// p: stride, padding, dilation, transposed (-2: always), output padding
void conv_work(const Inputs& in, const Spec& s, const Shape& hint, OpWork& w);
void conv_backward_work(const Inputs& in, const Spec& s, OpWork& w);         // p: grad, input, weight, transposed
void conv_backward_input_work(const Inputs& in, const Spec& s, OpWork& w);   // legacy: (input size, grad, weight)
void conv_backward_weight_work(const Inputs& in, const Spec& s, OpWork& w);  // legacy: (weight size, grad, input)
// p: q, layout (0 [B, H, S, D], 1 [B, S, H, D]), is_causal, custom mask type; k: 1 forward, 2.5 backward
void attention_work(const Inputs& in, const Spec& s, OpWork& w);

}  // namespace strata::opwork
