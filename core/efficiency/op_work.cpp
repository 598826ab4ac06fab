// The op work model (op_work.h): which ops it knows, and the pointwise, reduction, norm,
// gather and optimizer models. Matrix products, convolutions and attention: op_matrix_work.cpp.
#include "core/efficiency/op_work_internal.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace strata {

const char* kernel_class_name(KernelClass c) {
  switch (c) {
    case KernelClass::Gemm: return "gemm";
    case KernelClass::Conv: return "conv";
    case KernelClass::Attention: return "attention";
    case KernelClass::Elementwise: return "elementwise";
    case KernelClass::Reduction: return "reduction";
    case KernelClass::Norm: return "norm";
    case KernelClass::Communication: return "communication";
    case KernelClass::Copy: return "copy";
    case KernelClass::Other:
    case KernelClass::Count: break;
  }
  return "other";
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP64: return "fp64";
    case Precision::FP32: return "fp32";
    case Precision::FP16: return "fp16";
    case Precision::BF16: return "bf16";
    case Precision::FP8: return "fp8";
    case Precision::Integer: return "integer";
    case Precision::Unknown: break;
  }
  return "unknown";
}

namespace {

struct DtypeInfo {
  std::string_view name;
  int size;
  Precision precision;
};
// "Input type" spellings (c10's type names as the profiler writes them).
constexpr DtypeInfo kDtypes[] = {
    {"float", 4, Precision::FP32},          {"double", 8, Precision::FP64},
    {"c10::Half", 2, Precision::FP16},      {"c10::BFloat16", 2, Precision::BF16},
    {"c10::Float8_e4m3fn", 1, Precision::FP8}, {"c10::Float8_e5m2", 1, Precision::FP8},
    {"c10::Float8_e4m3fnuz", 1, Precision::FP8}, {"c10::Float8_e5m2fnuz", 1, Precision::FP8},
    {"long int", 8, Precision::Integer},    {"long", 8, Precision::Integer},
    {"int", 4, Precision::Integer},         {"short int", 2, Precision::Integer},
    {"signed char", 1, Precision::Integer}, {"unsigned char", 1, Precision::Integer},
    {"bool", 1, Precision::Integer},        {"c10::complex<float>", 8, Precision::FP32},
    {"c10::complex<double>", 16, Precision::FP64}, {"c10::complex<c10::Half>", 4, Precision::FP16},
    {"c10::qint8", 1, Precision::Integer},  {"c10::quint8", 1, Precision::Integer},
    {"c10::qint32", 4, Precision::Integer},
};

const DtypeInfo* dtype_info(std::string_view type) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == type) return &d;
  return nullptr;
}

}  // namespace

int dtype_size(std::string_view type) {
  const DtypeInfo* d = dtype_info(type);
  return d ? d->size : 0;
}

Precision dtype_precision(std::string_view type) {
  const DtypeInfo* d = dtype_info(type);
  return d ? d->precision : Precision::Unknown;
}

namespace opwork {

double numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= double(d);
  return n;
}

bool is_tensor(const Inputs& in, int k) {
  return k >= 0 && k < int(in.size()) && in[size_t(k)].shapes.size() == 1 && dtype_size(in[size_t(k)].type) > 0;
}
const Shape& shape(const Inputs& in, int k) { return in[size_t(k)].shapes[0]; }
int elem_size(const Inputs& in, int k) { return is_tensor(in, k) ? dtype_size(in[size_t(k)].type) : 0; }
double tensor_bytes(const Inputs& in, int k) { return is_tensor(in, k) ? numel(shape(in, k)) * elem_size(in, k) : 0; }

double input_bytes(const Inputs& in) {
  double b = 0;
  for (size_t k = 0; k < in.size(); ++k) b += tensor_bytes(in, int(k));
  return b;
}

Precision narrowest_float(const Inputs& in) {
  Precision best = Precision::Unknown;
  int best_size = 99;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!is_tensor(in, int(k))) continue;
    Precision p = dtype_precision(in[k].type);
    if (p == Precision::Integer || p == Precision::Unknown) continue;
    if (int sz = dtype_size(in[k].type); sz < best_size) best = p, best_size = sz;
  }
  return best;
}

bool int_list(std::string_view v, Shape& out) {
  out.clear();
  bool list = !v.empty() && v.front() == '[';
  if (list) {
    if (v.back() != ']') return false;
    v = v.substr(1, v.size() - 2);
  }
  for (size_t i = 0; i < v.size();) {
    while (i < v.size() && (v[i] == ' ' || v[i] == ',')) ++i;
    if (i == v.size()) break;
    int64_t x = 0;
    auto r = std::from_chars(v.data() + i, v.data() + v.size(), x);
    if (r.ec != std::errc()) return false;
    out.push_back(x);
    i = size_t(r.ptr - v.data());
  }
  return list || !out.empty();
}

int bool_value(std::string_view v) { return v == "True" ? 1 : v == "False" ? 0 : -1; }

std::vector<bool> bool_list(std::string_view v) {
  std::vector<bool> out;
  if (v.size() < 2 || v.front() != '[' || v.back() != ']') return {};
  v = v.substr(1, v.size() - 2);
  for (size_t i = 0; i < v.size();) {
    while (i < v.size() && (v[i] == ' ' || v[i] == ',')) ++i;
    if (i == v.size()) break;
    if (v.substr(i, 4) == "True") out.push_back(true), i += 4;
    else if (v.substr(i, 5) == "False") out.push_back(false), i += 5;
    else return {};
  }
  return out;
}

int scalar_type_size(std::string_view code) {
  // c10::ScalarType's numbering: Byte, Char, Short, Int, Long, Half, Float, Double, ComplexHalf,
  // ComplexFloat, ComplexDouble, Bool, QInt8, QUInt8, QInt32, BFloat16; 23-26 the FP8 types.
  static constexpr int kSizes[] = {1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4, 2};
  int c = -1;
  auto r = std::from_chars(code.data(), code.data() + code.size(), c);
  if (r.ec != std::errc()) return 0;
  if (c >= 0 && c < int(std::size(kSizes))) return kSizes[c];
  return c >= 23 && c <= 26 ? 1 : 0;
}

namespace {

// The models of the table below.
enum class Model : uint8_t {
  Gemm, Linear, Conv, ConvBackward, ConvBackwardInput, ConvBackwardWeight, Attention,
  Elementwise, CopyInPlace, Reduction, Norm, Embedding, IndexSelect, Gather, EmbeddingBackward,
  EmbeddingBag, Pool, PoolBackward, Foreach, FusedOptimizer, NllLoss, NllLossBackward, Concat
};

struct Entry {
  Model model;
  KernelClass cls;
  Spec spec;
};

Entry e(Model m, KernelClass c, std::initializer_list<int> p = {}, double k = 1) {
  Entry out{m, c, {}};
  size_t i = 0;
  for (int v : p) out.spec.p[i++] = v;
  out.spec.k = k;
  return out;
}

bool no_shapes(OpWork& w) {
  w.model = WorkModel::NoShapes;
  return false;
}

// The `out` argument of an op's .out variant, or -1: a tensor last, after a scalar (a number or
// a 0-d tensor), where schemas put it.
int out_argument(const Inputs& in) {
  const int last = int(in.size()) - 1;
  if (last < 2 || !is_tensor(in, last) || shape(in, last).empty()) return -1;
  return !is_tensor(in, last - 1) || shape(in, last - 1).empty() ? last : -1;
}

// Elementwise: the result is the inputs broadcast (the first input for an in-place op); every
// input read once and the result written once. p: result element size (-1: the widest input's,
// numbers wrapped as 0-d tensors aside), extra bytes written per element (dropout's mask).
void elementwise(std::string_view name, const Inputs& in, const Spec& s, OpWork& w) {
  Shape out;
  int widest = 0, widest_0d = 0;
  const int out_arg = out_argument(in);
  double read = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!is_tensor(in, int(k)) || int(k) == out_arg) continue;
    const Shape& sh = shape(in, int(k));
    read += tensor_bytes(in, int(k));
    int& wide = sh.empty() ? widest_0d : widest;
    wide = std::max(wide, elem_size(in, int(k)));
    for (size_t j = 0; j < k; ++j)
      if (is_tensor(in, int(j)) && !sh.empty() && shape(in, int(j)) == sh && in[j].type == in[k].type)
        w.same_input_bytes = std::max(w.same_input_bytes, tensor_bytes(in, int(k)));
    if (sh.size() > out.size()) out.insert(out.begin(), sh.size() - out.size(), 1);
    for (size_t i = 0; i < sh.size(); ++i) {
      int64_t& o = out[out.size() - sh.size() + i];
      if (o == 1) o = sh[i];
      else if (sh[i] != 1 && sh[i] != o) return void(no_shapes(w));
    }
  }
  if (!widest) widest = widest_0d;
  if (!widest) return void(no_shapes(w));
  const bool in_place = name.ends_with('_') && is_tensor(in, 0);
  const double n = in_place ? numel(shape(in, 0)) : numel(out);
  const int out_size = in_place ? elem_size(in, 0) : s.p[0] > 0 ? s.p[0] : out_arg >= 0 ? elem_size(in, out_arg) : widest;
  w.flops = n * s.k;
  w.bytes = read + n * (out_size + std::max(0, s.p[1]));
  w.read_bytes = read;
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// copy_, fill_, zero_: what they write is an input already (the destination): each tensor once.
void copy_in_place(const Inputs& in, OpWork& w) {
  if (!is_tensor(in, 0)) return void(no_shapes(w));
  w.bytes = input_bytes(in);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// A reduction of input 0 over the dims at p[0] (-1: all of them): k FLOPs per input element.
void reduction(const Inputs& in, const Spec& s, OpWork& w) {
  if (!is_tensor(in, 0)) return void(no_shapes(w));
  const Shape& x = shape(in, 0);
  double out = 1;
  if (s.p[0] >= 0 && s.p[0] < int(in.size())) {
    Shape dims;
    const OpInput& d = in[size_t(s.p[0])];
    if (int_list(d.value, dims)) {
      double reduced = 1;
      for (int64_t dim : dims) {
        int64_t i = dim < 0 ? dim + int64_t(x.size()) : dim;
        if (i >= 0 && i < int64_t(x.size())) reduced *= double(x[size_t(i)]);
      }
      out = dims.empty() ? 1 : numel(x) / std::max(1.0, reduced);
    } else if (!d.type.empty()) {
      out = 0;  // dims given but not recorded (the 2021 format): the (small) result is left out
      w.assumption = "reduced dims not recorded: the result's bytes are left out";
    }
  }
  w.flops = numel(x) * s.k;
  w.bytes = input_bytes(in) + out * elem_size(in, 0);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// Norms: statistics over the largest input, then one result of its size written (p[0] of them:
// a fused add + norm writes two). k FLOPs per element.
void norm(const Inputs& in, const Spec& s, OpWork& w) {
  int big = -1;
  for (size_t k = 0; k < in.size(); ++k)
    if (is_tensor(in, int(k)) && (big < 0 || tensor_bytes(in, int(k)) > tensor_bytes(in, big))) big = int(k);
  if (big < 0) return void(no_shapes(w));
  w.flops = numel(shape(in, big)) * s.k;
  w.bytes = input_bytes(in) + tensor_bytes(in, big) * (s.p[0] >= 0 ? s.p[0] : 1);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// Row gathers: embedding(weight, indices), index_select(self, dim, index), gather(self, dim,
// index): each gathered element read and written once, plus the indices.
void gather_rows(Model m, const Inputs& in, OpWork& w) {
  const int table = 0, index = m == Model::Embedding ? 1 : 2;
  if (!is_tensor(in, table) || !is_tensor(in, index) || shape(in, table).empty()) return void(no_shapes(w));
  const Shape& t = shape(in, table);
  double elems = numel(shape(in, index));
  if (m == Model::Embedding) {
    elems *= numel(t) / double(std::max<int64_t>(1, t[0]));
  } else if (m == Model::IndexSelect) {
    Shape dim;
    int64_t d = 0;
    if (int_list(in[1].value, dim) && dim.size() == 1) d = dim[0] < 0 ? dim[0] + int64_t(t.size()) : dim[0];
    else w.assumption = "index_select's dim not recorded: 0 assumed";
    if (d < 0 || d >= int64_t(t.size())) return void(no_shapes(w));
    elems *= numel(t) / double(std::max<int64_t>(1, t[size_t(d)]));
  }
  w.bytes = tensor_bytes(in, index) + 2 * elems * elem_size(in, table);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// embedding_dense_backward(grad_output, indices, num_weights, …): each gradient row added into
// a weight-sized gradient.
void embedding_backward(const Inputs& in, OpWork& w) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || shape(in, 0).empty()) return void(no_shapes(w));
  Shape rows;
  double written = tensor_bytes(in, 0);
  if (in.size() > 2 && int_list(in[2].value, rows) && rows.size() == 1)
    written = double(rows[0]) * double(shape(in, 0).back()) * elem_size(in, 0);
  else
    w.assumption = "num_weights not recorded: the weight gradient taken as large as the output gradient";
  w.flops = numel(shape(in, 0));
  w.bytes = input_bytes(in) + written;
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// embedding_bag(weight, indices, offsets, …): the gathered rows summed into one per bag.
void embedding_bag(const Inputs& in, OpWork& w) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || !is_tensor(in, 2) || shape(in, 0).empty()) return void(no_shapes(w));
  const Shape& t = shape(in, 0);
  const double row = numel(t) / double(std::max<int64_t>(1, t[0]));
  const double gathered = numel(shape(in, 1)) * row, bags = numel(shape(in, 2)) * row;
  w.flops = gathered;
  w.bytes = tensor_bytes(in, 1) + tensor_bytes(in, 2) + (gathered + bags) * elem_size(in, 0);
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// Pooling forward. p: kernel, stride, padding, dilation, ceil_mode (-1: absent), bytes of
// index written per output (max pooling's indices); adaptive pooling: p[0] its output size, p[1] -2.
void pool(const Inputs& in, const Spec& s, OpWork& w) {
  if (!is_tensor(in, 0) || shape(in, 0).size() < 3) return void(no_shapes(w));
  const Shape& x = shape(in, 0);
  const size_t dims = x.size() - 2;
  auto arg = [&](int k, Shape& out, int64_t fallback) {
    if (k < 0 || k >= int(in.size()) || !int_list(in[size_t(k)].value, out)) return false;
    if (out.empty()) out.assign(dims, fallback);
    if (out.size() == 1) out.assign(dims, out[0]);
    return out.size() == dims;
  };
  Shape kernel, out_sp, stride, padding, dilation;
  double window = 1;
  if (s.p[1] == -2) {
    if (!arg(s.p[0], out_sp, 1)) return void(no_shapes(w));
    window = numel(x) / (double(x[0]) * double(x[1]) * std::max(1.0, numel(out_sp)));
  } else {
    if (!arg(s.p[0], kernel, 1) || !arg(s.p[2], padding, 0)) return void(no_shapes(w));
    if (!arg(s.p[1], stride, -1)) return void(no_shapes(w));
    if (!arg(s.p[3], dilation, 1)) dilation.assign(dims, 1);
    const bool ceil_mode = s.p[4] >= 0 && s.p[4] < int(in.size()) && bool_value(in[size_t(s.p[4])].value) == 1;
    out_sp.resize(dims);
    for (size_t i = 0; i < dims; ++i) {
      const int64_t st = stride[i] > 0 ? stride[i] : kernel[i];  // an empty stride is the kernel's
      const int64_t span = x[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1;
      int64_t o = (ceil_mode ? (span + st - 1) / st : span / st) + 1;
      if (ceil_mode && (o - 1) * st >= x[2 + i] + padding[i]) --o;  // the last window must start inside
      if (o <= 0) return void(no_shapes(w));
      out_sp[i] = o;
      window *= double(kernel[i]);
    }
  }
  const double out = double(x[0]) * double(x[1]) * numel(out_sp);
  w.flops = out * window;
  w.bytes = input_bytes(in) + out * (elem_size(in, 0) + std::max(0, s.p[5]));
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// Pooling backward (grad_output, self, …): the input gradient (self's size) written, one
// operation per element of it.
void pool_backward(const Inputs& in, OpWork& w) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1)) return void(no_shapes(w));
  w.flops = numel(shape(in, 1));
  w.bytes = input_bytes(in);  // self is not read, but its size is written
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

constexpr const char* kListType = "TensorList element types are not recorded: float32 assumed";

// Elements of a TensorList input, or -1 when the profiler recorded no shapes for it.
double list_elems(const OpInput& i) {
  if (i.type != "TensorList" || i.shapes.empty() || (i.shapes.size() == 1 && i.shapes[0].empty())) return -1;
  double n = 0;
  for (const Shape& s : i.shapes) n += numel(s);
  return n;
}

// _foreach_*: elementwise over lists; reads every list, writes one the size of the first.
void foreach_op(const Inputs& in, const Spec& s, OpWork& w) {
  double first = -1, read = 0;
  for (const OpInput& i : in) {
    if (i.type != "TensorList") continue;
    const double n = list_elems(i);
    if (n < 0) return void(no_shapes(w));
    if (first < 0) first = n;
    read += n;
  }
  if (first < 0) return void(no_shapes(w));
  w.flops = first * s.k;
  w.bytes = 4 * (read + first) + input_bytes(in);
  w.model = WorkModel::Modelled;
  w.precision = Precision::FP32;
  w.assumption = kListType;
}

// Fused optimizer steps (_fused_adam_, _fused_sgd_, …): the first p[0] lists are per-element
// state (params, grads, moments; not the step counters): each non-empty one is read, and all but
// the gradients written. k FLOPs per parameter.
void fused_optimizer(const Inputs& in, const Spec& s, OpWork& w) {
  if (in.empty() || list_elems(in[0]) < 0) return void(no_shapes(w));
  const double n = list_elems(in[0]);
  double lists = 0;
  for (int k = 0; k < s.p[0] && k < int(in.size()); ++k) lists += list_elems(in[size_t(k)]) > 0;
  w.flops = n * s.k;
  w.bytes = 4 * n * (2 * lists - 1);
  w.model = WorkModel::Modelled;
  w.precision = Precision::FP32;
  w.assumption = kListType;
}

// nll_loss_forward(self, target, …): one element per target gathered; backward (grad_output,
// self, target, …) writes the input-sized gradient.
void nll_loss(bool backward, const Inputs& in, OpWork& w) {
  const int self = backward ? 1 : 0, target = self + 1;
  if (!is_tensor(in, self) || !is_tensor(in, target)) return void(no_shapes(w));
  const double n = numel(shape(in, target));
  w.flops = n;
  w.bytes = tensor_bytes(in, target) + (backward ? tensor_bytes(in, self) + tensor_bytes(in, 0) : (n + 1) * elem_size(in, self));
  w.model = WorkModel::Modelled;
  w.precision = narrowest_float(in);
}

// cat / stack (tensors, dim): every element read and written once.
void concat(const Inputs& in, OpWork& w) {
  const double n = in.empty() ? -1 : list_elems(in[0]);
  if (n < 0) return void(no_shapes(w));
  w.bytes = 2 * 4 * n;
  w.model = WorkModel::Modelled;
  w.precision = Precision::FP32;
  w.assumption = kListType;
}

using Table = std::unordered_map<std::string_view, Entry>;

void add_all(Table& t, std::initializer_list<std::string_view> names, const Entry& en) {
  for (std::string_view n : names) t.emplace(n, en);
}

// Every op the model knows, by its name without "aten::". Argument positions follow each op's
// schema (native_functions.yaml); older spellings share the entries of their successors.
Table make_table() {
  using K = KernelClass;
  using M = Model;
  Table t;
  add_all(t, {"mm", "bmm", "matmul", "mv", "dot"}, e(M::Gemm, K::Gemm, {0, 1}));
  add_all(t, {"addmm", "baddbmm", "addmv", "_addmm_activation", "addbmm"}, e(M::Gemm, K::Gemm, {1, 2}));
  t.emplace("_scaled_mm", e(M::Gemm, K::Gemm, {0, 1, -1, 6}));
  t.emplace("linear", e(M::Linear, K::Gemm, {0, 1}));
  // Convolutions: stride, padding, dilation, transposed (-2: always), output padding.
  add_all(t, {"conv1d", "conv2d", "conv3d", "cudnn_convolution_relu"}, e(M::Conv, K::Conv, {3, 4, 5}));
  add_all(t, {"convolution", "_convolution", "convolution_overrideable"}, e(M::Conv, K::Conv, {3, 4, 5, 6, 7}));
  t.emplace("cudnn_convolution", e(M::Conv, K::Conv, {3, 2, 4}));
  add_all(t, {"miopen_convolution", "mkldnn_convolution", "miopen_depthwise_convolution"}, e(M::Conv, K::Conv, {4, 3, 5}));
  t.emplace("cudnn_convolution_transpose", e(M::Conv, K::Conv, {4, 2, 5, -2, 3}));
  t.emplace("miopen_convolution_transpose", e(M::Conv, K::Conv, {5, 3, 6, -2, 4}));
  add_all(t, {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}, e(M::Conv, K::Conv, {3, 4, 7, -2, 5}));
  t.emplace("convolution_backward", e(M::ConvBackward, K::Conv, {0, 1, 2, 7}));
  add_all(t, {"cudnn_convolution_backward", "miopen_convolution_backward"}, e(M::ConvBackward, K::Conv, {1, 0, 2}));
  t.emplace("cudnn_convolution_backward_input", e(M::ConvBackwardInput, K::Conv));
  t.emplace("cudnn_convolution_backward_weight", e(M::ConvBackwardWeight, K::Conv));
  // Attention: q, layout (0 [B, H, S, D], 1 [B, S, H, D]), is_causal, mask type; k: backward 2.5×.
  t.emplace("scaled_dot_product_attention", e(M::Attention, K::Attention, {0, 0, 5}));
  t.emplace("_scaled_dot_product_flash_attention", e(M::Attention, K::Attention, {0, 0, 4}));
  add_all(t, {"_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"},
          e(M::Attention, K::Attention, {0, 0, 6}));
  t.emplace("_cudnn_attention_forward", e(M::Attention, K::Attention, {0, 0, 10}));
  t.emplace("_flash_attention_forward", e(M::Attention, K::Attention, {0, 1, 8}));
  t.emplace("_efficient_attention_forward", e(M::Attention, K::Attention, {0, 1, -1, 9}));
  add_all(t, {"_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward"},
          e(M::Attention, K::Attention, {1, 0, 11}, 2.5));
  add_all(t, {"_scaled_dot_product_cudnn_attention_backward", "_cudnn_attention_backward"},
          e(M::Attention, K::Attention, {1, 0, 14}, 2.5));
  t.emplace("_flash_attention_backward", e(M::Attention, K::Attention, {1, 1, 11}, 2.5));
  t.emplace("_efficient_attention_backward", e(M::Attention, K::Attention, {1, 1, -1, 14}, 2.5));
  // Elementwise, one operation per result element (two for fused multiply-adds).
  add_all(t, {"add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "neg_", "abs", "abs_", "exp",
              "exp_", "exp2", "expm1", "log", "log_", "log1p", "log2", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "reciprocal",
              "reciprocal_", "pow", "pow_", "square", "sigmoid", "sigmoid_", "tanh", "tanh_", "relu", "relu_", "gelu",
              "gelu_", "silu", "silu_", "mish", "mish_", "hardtanh", "hardtanh_", "hardswish", "hardswish_",
              "hardsigmoid", "leaky_relu", "leaky_relu_", "elu", "elu_", "softplus", "clamp", "clamp_", "clamp_min",
              "clamp_min_", "clamp_max", "clamp_max_", "threshold", "threshold_", "threshold_backward", "gelu_backward",
              "silu_backward", "sigmoid_backward", "tanh_backward", "hardtanh_backward", "hardswish_backward",
              "leaky_relu_backward", "elu_backward", "softplus_backward", "mish_backward", "where", "masked_fill",
              "masked_fill_", "nan_to_num", "nan_to_num_", "cos", "sin", "tan", "erf", "erfinv", "floor", "ceil",
              "round", "trunc", "frac", "sign", "sgn", "maximum", "minimum", "fmod", "remainder", "tril", "triu",
              "native_dropout_backward", "mse_loss_backward", "bernoulli_", "uniform_", "normal_", "exponential_",
              "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_not", "logical_and", "logical_or"},
          e(M::Elementwise, K::Elementwise));
  add_all(t, {"addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "lerp_"}, e(M::Elementwise, K::Elementwise, {}, 2));
  add_all(t, {"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf"}, e(M::Elementwise, K::Elementwise, {1}));
  t.emplace("native_dropout", e(M::Elementwise, K::Elementwise, {-1, 1}));  // and a one-byte mask
  add_all(t, {"flip", "roll"}, e(M::Elementwise, K::Copy, {}, 0));
  add_all(t, {"copy_", "fill_", "zero_"}, e(M::CopyInPlace, K::Copy));
  add_all(t, {"cat", "_cat", "stack"}, e(M::Concat, K::Copy));
  // Softmax: max, subtract, exp, sum, divide per element forward; backward y·(dy − Σ dy·y).
  add_all(t, {"_softmax", "softmax", "_log_softmax", "log_softmax"}, e(M::Elementwise, K::Reduction, {}, 5));
  add_all(t, {"_softmax_backward_data", "_log_softmax_backward_data"}, e(M::Elementwise, K::Reduction, {}, 4));
  t.emplace("cumsum", e(M::Elementwise, K::Reduction));
  // Reductions over the dims at p[0].
  add_all(t, {"sum", "mean", "amax", "amin", "prod", "var", "std", "var_mean", "std_mean", "logsumexp", "all", "any",
              "max", "min", "argmax", "argmin"},
          e(M::Reduction, K::Reduction, {1}));
  add_all(t, {"linalg_vector_norm", "norm"}, e(M::Reduction, K::Reduction, {2}, 2));
  t.emplace("mse_loss", e(M::Reduction, K::Reduction, {-1}, 3));
  t.emplace("nll_loss_forward", e(M::NllLoss, K::Reduction));
  t.emplace("nll_loss_backward", e(M::NllLossBackward, K::Reduction));
  // Norms: mean and variance (3), normalise (2) and the affine (2) per element; backward twice that.
  add_all(t, {"native_layer_norm", "layer_norm", "native_batch_norm", "batch_norm", "_batch_norm_impl_index",
              "cudnn_batch_norm", "miopen_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
              "_batch_norm_with_update", "_batch_norm_no_update", "native_group_norm", "group_norm"},
          e(M::Norm, K::Norm, {}, 7));
  add_all(t, {"native_layer_norm_backward", "native_batch_norm_backward", "cudnn_batch_norm_backward",
              "miopen_batch_norm_backward", "batch_norm_backward", "native_group_norm_backward"},
          e(M::Norm, K::Norm, {}, 14));
  // RMS norm: square and sum (2), scale and weight (2) per element.
  add_all(t, {"rms_norm", "_fused_rms_norm"}, e(M::Norm, K::Norm, {}, 4));
  t.emplace("_fused_rms_norm_backward", e(M::Norm, K::Norm, {}, 8));
  t.emplace("_C::rms_norm", e(M::Norm, K::Norm, {0}, 4));             // (out, input, weight, eps): out is an input
  t.emplace("_C::fused_add_rms_norm", e(M::Norm, K::Norm, {2}, 5));   // in place: input and residual written
  t.emplace("embedding", e(M::Embedding, K::Copy));
  t.emplace("index_select", e(M::IndexSelect, K::Copy));
  t.emplace("gather", e(M::Gather, K::Copy));
  t.emplace("embedding_dense_backward", e(M::EmbeddingBackward, K::Reduction));
  add_all(t, {"embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"}, e(M::EmbeddingBag, K::Copy));
  // Pooling: kernel, stride, padding, dilation, ceil_mode, index bytes per output.
  add_all(t, {"max_pool2d_with_indices", "max_pool3d_with_indices"}, e(M::Pool, K::Reduction, {1, 2, 3, 4, 5, 8}));
  add_all(t, {"max_pool1d", "max_pool2d", "max_pool3d"}, e(M::Pool, K::Reduction, {1, 2, 3, 4, 5}));
  add_all(t, {"avg_pool2d", "avg_pool3d"}, e(M::Pool, K::Reduction, {1, 2, 3, -1, 4}));
  add_all(t, {"_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d"}, e(M::Pool, K::Reduction, {1, -2}));
  add_all(t, {"max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward", "avg_pool2d_backward",
              "avg_pool3d_backward", "_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward"},
          e(M::PoolBackward, K::Reduction));
  // Fused optimizers: per-element lists, FLOPs per parameter (Adam: moments, bias corrections,
  // the update and weight decay ≈ 12; SGD with momentum ≈ 4; Adagrad ≈ 5).
  add_all(t, {"_fused_adam_", "_fused_adamw_", "_fused_adam", "_fused_adamw"}, e(M::FusedOptimizer, K::Elementwise, {5}, 12));
  add_all(t, {"_fused_sgd_", "_fused_sgd"}, e(M::FusedOptimizer, K::Elementwise, {3}, 4));
  add_all(t, {"_fused_adagrad_", "_fused_adagrad"}, e(M::FusedOptimizer, K::Elementwise, {3}, 5));
  return t;
}

const Table& table() {
  static const Table t = make_table();
  return t;
}

std::string_view bare(std::string_view name) { return name.starts_with("aten::") ? name.substr(6) : name; }

// The entry of an op, or null; _foreach_* ops share one (two FLOPs per element for the fused
// multiply-adds).
const Entry* entry_of(std::string_view name) {
  name = bare(name);
  if (name.starts_with("_foreach_")) {
    static const Entry one = e(Model::Foreach, KernelClass::Elementwise), two = e(Model::Foreach, KernelClass::Elementwise, {}, 2);
    const bool fma = name.find("addc") != std::string_view::npos || name.find("lerp") != std::string_view::npos;
    return fma ? &two : &one;
  }
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

}  // namespace
}  // namespace opwork

bool has_work_model(std::string_view name) { return opwork::entry_of(name) != nullptr; }

KernelClass op_class(std::string_view name) {
  const opwork::Entry* en = opwork::entry_of(name);
  return en ? en->cls : KernelClass::Other;
}

bool is_convolution_forward(std::string_view name) {
  const opwork::Entry* en = opwork::entry_of(name);
  return en && en->model == opwork::Model::Conv;
}

OpWork op_work(std::string_view name, const std::vector<OpInput>& in, const std::vector<int64_t>& hint) {
  using namespace opwork;
  OpWork w;
  const Entry* en = entry_of(name);
  if (!en) return w;
  w.cls = en->cls;
  if (in.empty()) {
    no_shapes(w);
    return w;
  }
  const Spec& s = en->spec;
  switch (en->model) {
    case Model::Gemm: gemm_work(in, s, w); break;
    case Model::Linear: linear_work(in, s, w); break;
    case Model::Conv: conv_work(in, s, hint, w); break;
    case Model::ConvBackward: conv_backward_work(in, s, w); break;
    case Model::ConvBackwardInput: conv_backward_input_work(in, s, w); break;
    case Model::ConvBackwardWeight: conv_backward_weight_work(in, s, w); break;
    case Model::Attention: attention_work(in, s, w); break;
    case Model::Elementwise: elementwise(bare(name), in, s, w); break;
    case Model::CopyInPlace: copy_in_place(in, w); break;
    case Model::Reduction: reduction(in, s, w); break;
    case Model::Norm: norm(in, s, w); break;
    case Model::Embedding:
    case Model::IndexSelect:
    case Model::Gather: gather_rows(en->model, in, w); break;
    case Model::EmbeddingBackward: embedding_backward(in, w); break;
    case Model::EmbeddingBag: embedding_bag(in, w); break;
    case Model::Pool: pool(in, s, w); break;
    case Model::PoolBackward: pool_backward(in, w); break;
    case Model::Foreach: foreach_op(in, s, w); break;
    case Model::FusedOptimizer: fused_optimizer(in, s, w); break;
    case Model::NllLoss: nll_loss(false, in, w); break;
    case Model::NllLossBackward: nll_loss(true, in, w); break;
    case Model::Concat: concat(in, w); break;
  }
  if (w.model == WorkModel::Modelled && w.read_bytes == 0) w.read_bytes = std::min(w.bytes, input_bytes(in));
  return w;
}

}  // namespace strata
