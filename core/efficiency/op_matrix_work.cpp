// Work of matrix products, convolutions and attention: 2 FLOPs (a multiply and an add) per
// multiply-accumulate, bytes = every operand read once and the result written once (what a
// kernel that keeps its tiles on chip moves; docs/efficiency.md).
#include "core/efficiency/op_work_internal.h"

#include <algorithm>

namespace strata::opwork {

namespace {

double prod(const Shape& s, size_t from) {
  double n = 1;
  for (size_t i = from; i < s.size(); ++i) n *= double(s[i]);
  return n;
}

// The elements of a broadcast of two batch shapes (numpy rules, from the right), or -1 when
// they do not broadcast.
double broadcast_batch(const Shape& a, size_t an, const Shape& b, size_t bn) {
  double n = 1;
  for (size_t i = 0; i < std::max(an, bn); ++i) {
    int64_t x = i < an ? a[an - 1 - i] : 1, y = i < bn ? b[bn - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return -1;
    n *= double(std::max(x, y));
  }
  return n;
}

bool no_shapes(OpWork& w) {
  w.model = WorkModel::NoShapes;
  return false;
}

// One list argument of a convolution or pooling (stride, padding, dilation), one value per
// spatial dimension: a single value applies to all. False when not recorded.
bool spatial_arg(const Inputs& in, int k, size_t dims, Shape& out) {
  if (k < 0 || k >= int(in.size()) || !int_list(in[size_t(k)].value, out) || out.empty()) return false;
  if (out.size() == 1) out.assign(dims, out[0]);
  return out.size() == dims;
}

// A convolution's output size per spatial dimension from its arguments (PyTorch's formula);
// false when they were not recorded.
bool conv_output(const Inputs& in, const Spec& s, const Shape& x, const Shape& wt, bool transposed, Shape& out) {
  const size_t dims = x.size() - 2;
  Shape stride, padding, dilation, out_pad(dims, 0);
  if (!spatial_arg(in, s.p[0], dims, stride) || !spatial_arg(in, s.p[2], dims, dilation)) return false;
  if (!spatial_arg(in, s.p[1], dims, padding)) {
    // conv2d's padding may be a word: "valid" is none; "same" keeps the size (stride 1 only).
    std::string_view v = s.p[1] >= 0 && s.p[1] < int(in.size()) ? std::string_view(in[size_t(s.p[1])].value) : "";
    if (v != "valid" && v != "same") return false;
    padding.assign(dims, 0);
    if (v == "same") {
      out.assign(x.begin() + 2, x.end());
      return true;
    }
  }
  if (transposed && s.p[4] >= 0) spatial_arg(in, s.p[4], dims, out_pad);
  out.resize(dims);
  for (size_t i = 0; i < dims; ++i) {
    const int64_t k = wt[2 + i], dk = dilation[i] * (k - 1);
    out[i] = transposed ? (x[2 + i] - 1) * stride[i] - 2 * padding[i] + dk + out_pad[i] + 1
                        : (x[2 + i] + 2 * padding[i] - dk - 1) / std::max<int64_t>(1, stride[i]) + 1;
    if (out[i] <= 0) return false;
  }
  return true;
}

}  // namespace

void gemm_work(const Inputs& in, const Spec& s, OpWork& w) {
  if (!is_tensor(in, s.p[0]) || !is_tensor(in, s.p[1])) return void(no_shapes(w));
  const Shape &a = shape(in, s.p[0]), &b = shape(in, s.p[1]);
  if (a.empty() || b.empty()) return void(no_shapes(w));
  // a: [..., M, K] or [K]; b: [..., K, N] or [K] (matmul's rules).
  const double m = a.size() == 1 ? 1 : double(a[a.size() - 2]), n = b.size() == 1 ? 1 : double(b.back());
  const int64_t k = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  const double batch = broadcast_batch(a, a.size() < 2 ? 0 : a.size() - 2, b, b.size() < 2 ? 0 : b.size() - 2);
  if (k != kb || batch < 0) return void(no_shapes(w));
  int out_size = elem_size(in, s.p[0]);
  if (s.p[3] >= 0) {
    // _scaled_mm: FP8 operands, the result in its out_dtype (bf16 when not recorded).
    out_size = s.p[3] < int(in.size()) ? scalar_type_size(in[size_t(s.p[3])].value) : 0;
    if (!out_size) {
      out_size = 2;
      w.assumption = "the result type of _scaled_mm was not recorded: bf16 assumed";
    }
  }
  w.model = WorkModel::Modelled;
  w.flops = 2 * batch * m * n * double(k);
  w.bytes = input_bytes(in) + batch * m * n * out_size;
  w.precision = narrowest_float(in);
}

void linear_work(const Inputs& in, const Spec& s, OpWork& w) {
  if (!is_tensor(in, s.p[0]) || !is_tensor(in, s.p[1])) return void(no_shapes(w));
  const Shape &x = shape(in, s.p[0]), &wt = shape(in, s.p[1]);
  if (x.empty() || wt.size() != 2 || x.back() != wt[1]) return void(no_shapes(w));
  const double rows = numel(x) / double(x.back()), n = double(wt[0]), k = double(wt[1]);
  w.model = WorkModel::Modelled;
  w.flops = 2 * rows * n * k;
  w.bytes = input_bytes(in) + rows * n * elem_size(in, s.p[0]);
  w.precision = narrowest_float(in);
}

void conv_work(const Inputs& in, const Spec& s, const Shape& hint, OpWork& w) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1)) return void(no_shapes(w));
  const Shape &x = shape(in, 0), &wt = shape(in, 1);
  if (x.size() < 3 || wt.size() != x.size()) return void(no_shapes(w));
  bool transposed = s.p[3] == -2;
  if (s.p[3] >= 0 && s.p[3] < int(in.size())) transposed = bool_value(in[size_t(s.p[3])].value) == 1;
  Shape out_spatial;
  const int64_t channels = transposed ? -1 : wt[0];  // a transposed weight's groups are not in its shape
  if (!conv_output(in, s, x, wt, transposed, out_spatial)) {
    // No stride or padding recorded (the 2021 format): the output as the next op saw it.
    if (hint.size() != x.size() || hint[0] != x[0] || (channels > 0 && hint[1] != channels)) return void(no_shapes(w));
    out_spatial.assign(hint.begin() + 2, hint.end());
    w.assumption = "stride and padding not recorded: the output size is the next op's input";
  }
  const double out_channels = transposed ? (hint.size() == x.size() ? double(hint[1]) : double(wt[1])) : double(wt[0]);
  const double out = double(x[0]) * out_channels * prod(out_spatial, 0);
  // Each output element of a direct convolution sums Cin/groups · kernel products (the
  // weight's shape past its first dimension); transposed, each input element spreads so.
  w.flops = 2 * (transposed ? numel(x) : out) * prod(wt, 1);
  w.bytes = input_bytes(in) + out * elem_size(in, 0);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) and the older cudnn_convolution_backward
// (input, grad_output, weight, …, output_mask): each gradient asked for is a convolution of the
// forward's size; the bias gradient sums grad_output.
void conv_backward_work(const Inputs& in, const Spec& s, OpWork& w) {
  const int g = s.p[0], x = s.p[1], wt = s.p[2];
  if (!is_tensor(in, g) || !is_tensor(in, x) || !is_tensor(in, wt)) return void(no_shapes(w));
  const Shape &go = shape(in, g), &ws = shape(in, wt);
  if (ws.size() != go.size() || go.size() < 3) return void(no_shapes(w));
  const bool transposed = s.p[3] >= 0 && s.p[3] < int(in.size()) && bool_value(in[size_t(s.p[3])].value) == 1;
  std::vector<bool> mask;  // the last list of booleans: output_mask
  for (const OpInput& i : in)
    if (std::vector<bool> b = bool_list(i.value); !b.empty()) mask = b;
  if (mask.size() < 2) {
    mask = {true, true, false};
    w.assumption = "output mask not recorded: input and weight gradients assumed";
  }
  const double fwd = 2 * (transposed ? numel(shape(in, x)) : numel(go)) * prod(ws, 1);
  const double gb = tensor_bytes(in, g), xb = tensor_bytes(in, x), wb = tensor_bytes(in, wt);
  w.flops = fwd * (double(mask[0]) + double(mask[1]));
  // The input gradient reads grad_output and the weight and writes an input-sized tensor; the
  // weight gradient reads grad_output and the input and writes a weight-sized one.
  w.bytes = (mask[0] ? gb + wb + xb : 0) + (mask[1] ? gb + xb + wb : 0);
  if (mask.size() > 2 && mask[2]) {
    w.flops += numel(go);
    w.bytes += gb;
  }
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// cudnn_convolution_backward_input(self_size, grad_output, weight, padding, stride, …): the
// 2021 format records neither the size nor the stride.
void conv_backward_input_work(const Inputs& in, const Spec&, OpWork& w) {
  if (!is_tensor(in, 1) || !is_tensor(in, 2)) return void(no_shapes(w));
  const Shape &go = shape(in, 1), &ws = shape(in, 2);
  if (ws.size() != go.size() || go.size() < 3) return void(no_shapes(w));
  Shape input_size;
  double in_elems = 0;
  if (int_list(in[0].value, input_size) && input_size.size() == go.size()) {
    in_elems = numel(input_size);
  } else {
    in_elems = numel(go) / double(ws[0]) * double(ws[1]);
    w.assumption = "input size not recorded: the input gradient taken as large as the output gradient per channel";
  }
  w.flops = 2 * numel(go) * prod(ws, 1);
  w.bytes = input_bytes(in) + in_elems * elem_size(in, 1);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// cudnn_convolution_backward_weight(weight_size, grad_output, input, …): without the weight's
// size (the 2021 format) its kernel size is unknown.
void conv_backward_weight_work(const Inputs& in, const Spec&, OpWork& w) {
  Shape ws;
  if (!is_tensor(in, 1) || !is_tensor(in, 2) || in.empty() || !int_list(in[0].value, ws)) return void(no_shapes(w));
  const Shape& go = shape(in, 1);
  if (ws.size() != go.size()) return void(no_shapes(w));
  w.flops = 2 * numel(go) * prod(ws, 1);
  w.bytes = input_bytes(in) + numel(ws) * elem_size(in, 1);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// Q·Kᵀ and P·V: 2·B·H·Sq·Sk·(D + Dv) FLOPs forward; backward recomputes P and makes dV, dP,
// dQ and dK (2.5× forward, FlashAttention's count); a causal mask skips about half.
void attention_work(const Inputs& in, const Spec& s, OpWork& w) {
  const int q = s.p[0];
  if (!is_tensor(in, q) || !is_tensor(in, q + 1) || !is_tensor(in, q + 2)) return void(no_shapes(w));
  const Shape &qs = shape(in, q), &ks = shape(in, q + 1), &vs = shape(in, q + 2);
  // Variable-length batches ([total, H, D]) need each sequence's length: not recorded.
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) return void(no_shapes(w));
  const bool bshd = s.p[1] == 1;
  const double b = double(qs[0]), h = double(bshd ? qs[2] : qs[1]), sq = double(bshd ? qs[1] : qs[2]);
  const double sk = double(bshd ? ks[1] : ks[2]), d = double(qs[3]), dv = double(vs[3]);
  int causal = -1;
  if (s.p[2] >= 0 && s.p[2] < int(in.size())) causal = bool_value(in[size_t(s.p[2])].value);
  if (s.p[3] >= 0 && s.p[3] < int(in.size())) {
    Shape mask_type;  // efficient attention: 0 none, 1 causal from the top left, 2 from the bottom right
    if (int_list(in[size_t(s.p[3])].value, mask_type) && mask_type.size() == 1) causal = mask_type[0] != 0;
  }
  if (causal < 0) w.assumption = "causal mask not recorded: full attention assumed";
  const double fwd = 2 * b * h * sq * sk * (d + dv) * (causal == 1 ? 0.5 : 1.0);
  w.flops = fwd * s.k;
  const double qkv = tensor_bytes(in, q) + tensor_bytes(in, q + 1) + tensor_bytes(in, q + 2);
  // Forward writes the output; backward reads what it is given and writes dQ, dK, dV.
  w.bytes = input_bytes(in) + (s.k > 1 ? qkv : b * h * sq * dv * elem_size(in, q));
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

}  // namespace strata::opwork
