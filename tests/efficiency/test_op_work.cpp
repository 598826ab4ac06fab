// FLOPs and bytes of every op kind the work model knows, against values computed by hand from
// made-up inputs shaped as the profiler records them.
#include "core/efficiency/op_work.h"
#include "core/import/json_args.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace strata;

namespace {

using Shape = std::vector<int64_t>;

OpInput t(const char* type, Shape s) { return OpInput{{std::move(s)}, type, ""}; }
OpInput arg(const char* value, const char* type = "Scalar") { return OpInput{{Shape{}}, type, value}; }
OpInput none() { return OpInput{{Shape{}}, "", ""}; }
OpInput list(std::vector<Shape> s) { return OpInput{std::move(s), "TensorList", ""}; }

// Checks a modelled op's FLOPs and bytes exactly (the sums are of integers well inside a double).
void check(const OpWork& w, double flops, double bytes) {
  REQUIRE(w.model == WorkModel::Modelled);
  CHECK(w.flops == flops);
  CHECK(w.bytes == bytes);
}

}  // namespace

TEST_CASE("op inputs from the event's JSON: shapes, TensorLists, types and concrete values") {
  auto in = op_inputs_json(R"({"ph": "X", "args": {"External id": 3, "Input Dims": [[16, 3, 112, 112], [64, 3, 7, 7], [],)"
                           R"( [[2, 3], [4]], [[], []]], "Input type": ["float", "c10::BFloat16", "ScalarList", "TensorList",)"
                           R"( "TensorList"], "Concrete Inputs": ["", "", "[3, 3]", "", "a\"b"]}})");
  REQUIRE(in.size() == 5);
  CHECK(in[0].shapes == std::vector<Shape>{{16, 3, 112, 112}});
  CHECK(in[1].type == "c10::BFloat16");
  CHECK(in[2].shapes == std::vector<Shape>{{}});
  CHECK(in[2].value == "[3, 3]");
  CHECK(in[3].shapes == std::vector<Shape>{{2, 3}, {4}});
  CHECK(in[4].shapes == std::vector<Shape>{{}, {}});
  CHECK(in[4].value == "a\"b");
  CHECK(op_inputs_json(R"({"args": {"External id": 3}})").empty());
  // The 2021 format writes no Concrete Inputs.
  auto legacy = op_inputs_json(R"({"args": {"Input Dims": [[1], []], "Input type": ["float", "Int"]}})");
  REQUIRE(legacy.size() == 2);
  CHECK(legacy[1].type == "Int");
  CHECK(legacy[1].value.empty());
  CHECK(op_inputs_json(R"({"args": {"Input Dims": [[1, 2)").empty());  // cut short
}

TEST_CASE("element types") {
  CHECK(dtype_size("float") == 4);
  CHECK(dtype_size("c10::BFloat16") == 2);
  CHECK(dtype_size("c10::Half") == 2);
  CHECK(dtype_size("c10::Float8_e4m3fn") == 1);
  CHECK(dtype_size("long int") == 8);
  CHECK(dtype_size("Scalar") == 0);
  CHECK(dtype_size("TensorList") == 0);
  CHECK(dtype_size("Int") == 0);  // the 2021 format's scalar
  CHECK(dtype_precision("c10::BFloat16") == Precision::BF16);
  CHECK(dtype_precision("bool") == Precision::Integer);
}

TEST_CASE("matrix products: 2·M·N·K, operands read and the result written once") {
  OpWork mm = op_work("aten::mm", {t("float", {64, 512}), t("float", {512, 1024})});
  check(mm, 2.0 * 64 * 1024 * 512, 4.0 * (64 * 512 + 512 * 1024 + 64 * 1024));
  CHECK(mm.cls == KernelClass::Gemm);
  CHECK(mm.precision == Precision::FP32);
  check(op_work("aten::addmm", {t("c10::BFloat16", {8}), t("c10::BFloat16", {4, 16}), t("c10::BFloat16", {16, 8}), arg("1"), arg("1")}),
        1024, 2 * (8 + 64 + 128 + 32));
  check(op_work("aten::bmm", {t("c10::Half", {3, 4, 5}), t("c10::Half", {3, 5, 6})}), 720, 2 * (60 + 90 + 72));
  check(op_work("aten::baddbmm", {t("float", {3, 4, 6}), t("float", {3, 4, 5}), t("float", {3, 5, 6}), arg("1"), arg("1")}), 720,
        4 * (72 + 60 + 90 + 72));
  // matmul broadcasts batch dims; a vector operand is one row or column.
  check(op_work("aten::matmul", {t("float", {2, 3, 4, 5}), t("float", {5, 6})}), 1440, 4 * (120 + 30 + 144));
  check(op_work("aten::matmul", {t("float", {5}), t("float", {5, 6})}), 60, 4 * (5 + 30 + 6));
  check(op_work("aten::linear", {t("float", {2, 10, 32}), t("float", {64, 32}), t("float", {64})}), 81920,
        4 * (640 + 2048 + 64 + 1280));
  OpWork fp8 = op_work("aten::_scaled_mm", {t("c10::Float8_e4m3fn", {16, 32}), t("c10::Float8_e4m3fn", {32, 64}), t("float", {}),
                                            t("float", {}), none(), none(), arg("15"), arg("False")});
  check(fp8, 65536, 512 + 2048 + 4 + 4 + 16 * 64 * 2);
  CHECK(fp8.precision == Precision::FP8);
  CHECK(fp8.assumption == nullptr);
  CHECK(op_work("aten::_scaled_mm", {t("c10::Float8_e4m3fn", {16, 32}), t("c10::Float8_e4m3fn", {32, 64})}).assumption != nullptr);
  CHECK(op_work("aten::mm", {t("float", {4, 5}), t("float", {6, 7})}).model == WorkModel::NoShapes);  // K differs
}

TEST_CASE("convolution forward: the output from stride, padding and dilation; groups from the weight") {
  // resnet's first conv: 112×112 → 56×56 (cudnn_convolution: padding before stride).
  OpWork c = op_work("aten::cudnn_convolution", {t("float", {16, 3, 112, 112}), t("float", {64, 3, 7, 7}), arg("[3, 3]", "ScalarList"),
                                                 arg("[2, 2]", "ScalarList"), arg("[1, 1]", "ScalarList"), arg("1")});
  check(c, 2.0 * (16 * 64 * 56 * 56) * (3 * 49), 4.0 * (16 * 3 * 112 * 112 + 64 * 147 + 16 * 64 * 56 * 56));
  CHECK(c.cls == KernelClass::Conv);
  // Depthwise (groups 32): each output sums 1 channel × 3×3.
  check(op_work("aten::conv2d", {t("float", {2, 32, 10, 10}), t("float", {32, 1, 3, 3}), none(), arg("[1, 1]", "ScalarList"),
                                 arg("[1, 1]", "ScalarList"), arg("[1, 1]", "ScalarList"), arg("32")}),
        2.0 * (2 * 32 * 100) * 9, 4.0 * (6400 + 288 + 6400));
  check(op_work("aten::conv2d", {t("float", {1, 4, 9, 9}), t("float", {8, 4, 3, 3}), none(), arg("[1]", "ScalarList"),
                                 arg("same", "str"), arg("[1]", "ScalarList"), arg("1")}),
        2.0 * (8 * 81) * 36, 4.0 * (324 + 288 + 648));
  // Transposed: each input element spreads over Cout/groups × kernel; 5×5 → 10×10.
  check(op_work("aten::convolution", {t("float", {1, 8, 5, 5}), t("float", {8, 4, 3, 3}), none(), arg("[2, 2]", "ScalarList"),
                                      arg("[1, 1]", "ScalarList"), arg("[1, 1]", "ScalarList"), arg("True"),
                                      arg("[1, 1]", "ScalarList"), arg("1")}),
        2.0 * 200 * 36, 4.0 * (200 + 288 + 400));
  // The 2021 format: no stride or padding; the output as the next op's input says.
  std::vector<OpInput> legacy = {t("float", {32, 64, 56, 56}), t("float", {128, 64, 3, 3}), arg("", "GenericList"),
                                 arg("", "GenericList"), arg("", "GenericList"), arg("", "Int")};
  OpWork hinted = op_work("aten::cudnn_convolution", legacy, {32, 128, 28, 28});
  check(hinted, 2.0 * (32 * 128 * 784) * 576, 4.0 * (32 * 64 * 3136 + 128 * 576 + 32 * 128 * 784));
  CHECK(hinted.assumption != nullptr);
  CHECK(op_work("aten::cudnn_convolution", legacy).model == WorkModel::NoShapes);
  CHECK(op_work("aten::cudnn_convolution", legacy, {32, 64, 28, 28}).model == WorkModel::NoShapes);  // not its channels
  CHECK(is_convolution_forward("aten::cudnn_convolution"));
  CHECK_FALSE(is_convolution_forward("aten::convolution_backward"));
}

TEST_CASE("convolution backward: the gradients its output mask asks for") {
  const double fwd = 2.0 * (16 * 64 * 784) * 576, g = 4.0 * 16 * 64 * 784, w = 4.0 * 64 * 576;
  auto inputs = [](const char* mask) {
    return std::vector<OpInput>{t("float", {16, 64, 28, 28}), t("float", {16, 64, 28, 28}), t("float", {64, 64, 3, 3}),
                                arg("[0]", "ScalarList"), arg("[1, 1]", "ScalarList"), arg("[1, 1]", "ScalarList"),
                                arg("[1, 1]", "ScalarList"), arg("False"), arg("[0, 0]", "ScalarList"), arg("1"),
                                arg(mask, "ScalarList")};
  };
  check(op_work("aten::convolution_backward", inputs("[True, True, False]")), 2 * fwd, 2 * (g + w + g));
  // The first layer: no input gradient; with a bias, its gradient sums grad_output.
  check(op_work("aten::convolution_backward", inputs("[False, True, True]")), fwd + 16 * 64 * 784, (g + g + w) + g);
  OpWork no_mask = op_work("aten::convolution_backward", inputs(""));
  check(no_mask, 2 * fwd, 2 * (g + w + g));
  CHECK(no_mask.assumption != nullptr);
  // The 2021 format's separate ops: the input gradient's size and the weight's are not recorded.
  const double g7 = 4.0 * 32 * 2048 * 49;
  OpWork in = op_work("aten::cudnn_convolution_backward_input",
                      {arg("", "GenericList"), t("float", {32, 2048, 7, 7}), t("float", {2048, 512, 1, 1})});
  check(in, 2.0 * (32 * 2048 * 49) * 512, g7 + 4.0 * 2048 * 512 + 4.0 * 32 * 512 * 49);
  CHECK(in.assumption != nullptr);
  CHECK(op_work("aten::cudnn_convolution_backward_input",
                {arg("[32, 512, 7, 7]", "ScalarList"), t("float", {32, 2048, 7, 7}), t("float", {2048, 512, 1, 1})})
            .assumption == nullptr);
  check(op_work("aten::cudnn_convolution_backward_weight",
                {arg("[2048, 512, 1, 1]", "ScalarList"), t("float", {32, 2048, 7, 7}), t("float", {32, 512, 7, 7})}),
        2.0 * (32 * 2048 * 49) * 512, g7 + 4.0 * 32 * 512 * 49 + 4.0 * 2048 * 512);
  CHECK(op_work("aten::cudnn_convolution_backward_weight",
                {arg("", "GenericList"), t("float", {32, 2048, 7, 7}), t("float", {32, 512, 7, 7})})
            .model == WorkModel::NoShapes);
}

TEST_CASE("attention: 4·B·H·Sq·Sk·D forward, 2.5× backward, half when causal") {
  const double full = 2.0 * 2 * 8 * 128 * 128 * (64 + 64), qkv = 2.0 * 2 * 128 * 8 * 64;  // bytes of one bf16 [2, 128, 8, 64]
  auto bshd = [] { return t("c10::BFloat16", {2, 128, 8, 64}); };
  OpWork flash = op_work("aten::_flash_attention_forward", {bshd(), bshd(), bshd(), none(), none(), arg("128"), arg("128"),
                                                            arg("0."), arg("True"), arg("False"), arg("0.125")});
  check(flash, full / 2, 4 * qkv);
  CHECK(flash.cls == KernelClass::Attention);
  CHECK(flash.precision == Precision::BF16);
  auto bhsd = [] { return t("c10::BFloat16", {2, 8, 128, 64}); };
  check(op_work("aten::scaled_dot_product_attention", {bhsd(), bhsd(), bhsd(), none(), arg("0."), arg("False"), none(), arg("False")}),
        full, 4 * qkv);
  // Backward reads dO, Q, K, V, O, the log-sum-exp and the RNG state, and writes dQ, dK, dV.
  const double lse = 4.0 * 2 * 8 * 128, rng = 8 + 8;
  check(op_work("aten::_scaled_dot_product_flash_attention_backward",
                {bhsd(), bhsd(), bhsd(), bhsd(), bhsd(), t("float", {2, 8, 128}), none(), none(), arg("128"), arg("128"),
                 arg("0."), arg("False"), t("long int", {}), t("long int", {}), arg("0.125")}),
        2.5 * full, 5 * qkv + lse + rng + 3 * qkv);
  // Efficient attention's mask type 1 is causal.
  check(op_work("aten::_efficient_attention_forward", {bshd(), bshd(), bshd(), none(), none(), none(), arg(""), arg(""), arg("0."),
                                                       arg("1"), arg("False")}),
        full / 2, 4 * qkv);
  OpWork unknown = op_work("aten::_flash_attention_forward", {bshd(), bshd(), bshd()});
  check(unknown, full, 4 * qkv);
  CHECK(unknown.assumption != nullptr);
  // Variable-length batches ([total, H, D]) need each sequence's length.
  CHECK(op_work("aten::_flash_attention_forward", {t("c10::BFloat16", {256, 8, 64}), t("c10::BFloat16", {256, 8, 64}),
                                                   t("c10::BFloat16", {256, 8, 64})})
            .model == WorkModel::NoShapes);
}

TEST_CASE("elementwise: one operation per result element; inputs read, the result written") {
  OpWork add = op_work("aten::add", {t("float", {4, 1, 8}), t("float", {1, 3, 8}), arg("1")});
  check(add, 96, 4 * (32 + 24 + 96));
  CHECK(add.cls == KernelClass::Elementwise);
  check(op_work("aten::add_", {t("float", {4, 3, 8}), t("float", {8}), arg("1")}), 96, 4 * (96 + 8 + 96));
  check(op_work("aten::eq", {t("long int", {10}), arg("1")}), 10, 80 + 10);  // a bool result
  check(op_work("aten::native_dropout", {t("c10::BFloat16", {4, 8}), arg("0.1"), arg("True")}), 32, 2 * 32 + 32 * 3);  // and its mask
  check(op_work("aten::addcmul", {t("float", {10}), t("float", {10}), t("float", {10}), arg("1")}), 20, 4 * 40);
  check(op_work("aten::add", {t("float", {10}), t("c10::BFloat16", {10}), arg("1")}), 10, 40 + 20 + 40);  // promoted to float
  OpWork copy = op_work("aten::copy_", {t("c10::BFloat16", {10}), t("float", {10}), arg("False")});
  check(copy, 0, 20 + 40);
  CHECK(copy.cls == KernelClass::Copy);
  check(op_work("aten::fill_", {t("float", {100}), arg("0")}), 0, 400);
  CHECK(op_work("aten::add", {t("float", {4}), t("float", {5})}).model == WorkModel::NoShapes);  // no broadcast
}

TEST_CASE("softmax and reductions") {
  OpWork sm = op_work("aten::_softmax", {t("float", {8, 100}), arg("-1"), arg("False")});
  check(sm, 5 * 800, 4 * 1600);
  CHECK(sm.cls == KernelClass::Reduction);
  check(op_work("aten::_log_softmax_backward_data", {t("float", {8, 100}), t("float", {8, 100}), arg("1"), arg("6")}), 4 * 800,
        4 * 2400);
  check(op_work("aten::sum", {t("float", {16, 1000}), arg("[0]", "ScalarList"), arg("True"), none()}), 16000, 4 * (16000 + 1000));
  check(op_work("aten::mean", {t("float", {16, 512, 4, 4}), arg("[-1, -2]", "ScalarList"), arg("True"), none()}), 131072,
        4 * (131072 + 8192));
  check(op_work("aten::sum", {t("float", {100}), none()}), 100, 4 * 101);
  OpWork legacy = op_work("aten::mean", {t("float", {32, 2048, 7, 7}), arg("", "GenericList"), arg("", "Bool"), none()});
  check(legacy, 32 * 2048 * 49, 4.0 * 32 * 2048 * 49);
  CHECK(legacy.assumption != nullptr);
  check(op_work("aten::mse_loss", {t("float", {10}), t("float", {10}), arg("1")}), 30, 4 * 21);
  check(op_work("aten::nll_loss_forward", {t("float", {16, 1000}), t("long int", {16}), none(), arg("1"), arg("-100")}), 16,
        128 + 17 * 4);
  check(op_work("aten::nll_loss_backward", {t("float", {}), t("float", {16, 1000}), t("long int", {16}), none(), arg("1"),
                                            arg("-100"), t("float", {})}),
        16, 128 + 64000 + 4);
}

TEST_CASE("norms: statistics over the input, one result of its size written") {
  OpWork ln = op_work("aten::native_layer_norm", {t("float", {8, 128, 256}), arg("[256]", "ScalarList"), t("float", {256}),
                                                  t("float", {256}), arg("1e-05")});
  check(ln, 7.0 * 262144, 4.0 * (262144 + 512) + 4.0 * 262144);
  CHECK(ln.cls == KernelClass::Norm);
  check(op_work("aten::native_layer_norm_backward",
                {t("float", {8, 128, 256}), t("float", {8, 128, 256}), arg("[256]", "ScalarList"), t("float", {8, 128, 1}),
                 t("float", {8, 128, 1}), t("float", {256}), t("float", {256}), arg("[True, True, True]", "ScalarList")}),
        14.0 * 262144, 4.0 * (2 * 262144 + 2 * 1024 + 512) + 4.0 * 262144);
  check(op_work("aten::cudnn_batch_norm", {t("float", {16, 64, 56, 56}), t("float", {64}), t("float", {64}), t("float", {64}),
                                           t("float", {64}), arg("True"), arg("0.1"), arg("1e-05")}),
        7.0 * 3211264, 4.0 * (3211264 + 256) + 4.0 * 3211264);
  // vLLM's fused residual add and RMS norm writes both in place; its plain norm is given its output.
  check(op_work("_C::fused_add_rms_norm", {t("c10::BFloat16", {4, 64}), t("c10::BFloat16", {4, 64}), t("c10::BFloat16", {64}), arg("1e-05")}),
        5 * 256, 2 * (256 + 256 + 64) + 2 * 2 * 256);
  check(op_work("_C::rms_norm", {t("c10::BFloat16", {4, 64}), t("c10::BFloat16", {4, 64}), t("c10::BFloat16", {64}), arg("1e-05")}),
        4 * 256, 2 * (256 + 256 + 64));
}

TEST_CASE("embedding lookups and gathers: each row read and written, plus the indices") {
  OpWork emb = op_work("aten::embedding", {t("float", {1000, 256}), t("long int", {8, 128}), arg("-1"), arg("False"), arg("False")});
  check(emb, 0, 8 * 1024 + 2.0 * 1024 * 256 * 4);
  CHECK(emb.cls == KernelClass::Copy);
  check(op_work("aten::index_select", {t("c10::BFloat16", {30522, 512}), arg("0"), t("long int", {141})}), 0,
        141 * 8 + 2.0 * 141 * 512 * 2);
  check(op_work("aten::gather", {t("float", {1000, 256}), arg("0"), t("long int", {1024, 256}), arg("False")}), 0,
        8.0 * 262144 + 2.0 * 262144 * 4);
  check(op_work("aten::embedding_dense_backward", {t("float", {8, 128, 256}), t("long int", {8, 128}), arg("1000"), arg("-1"), arg("False")}),
        262144, 4.0 * 262144 + 8 * 1024 + 1000.0 * 256 * 4);
  check(op_work("aten::embedding_bag", {t("float", {100, 16}), t("long int", {40}), t("long int", {8})}), 640,
        320 + 64 + (640 + 128) * 4);
}

TEST_CASE("pooling: windows from kernel, stride and padding") {
  const double out = 16 * 64 * 28 * 28;
  check(op_work("aten::max_pool2d_with_indices", {t("float", {16, 64, 56, 56}), arg("[3, 3]", "ScalarList"), arg("[2, 2]", "ScalarList"),
                                                  arg("[1, 1]", "ScalarList"), arg("[1, 1]", "ScalarList"), arg("False")}),
        out * 9, 4.0 * 3211264 + out * (4 + 8));
  // An empty stride is the kernel's; ceil mode keeps a last partial window.
  check(op_work("aten::avg_pool2d", {t("float", {1, 1, 5, 5}), arg("[2, 2]", "ScalarList"), arg("[]", "ScalarList"),
                                     arg("[0, 0]", "ScalarList"), arg("True"), arg("True"), none()}),
        9 * 4, 4 * (25 + 9));
  check(op_work("aten::_adaptive_avg_pool2d", {t("float", {2, 8, 6, 6}), arg("[1, 1]", "ScalarList")}), 16 * 36, 4 * (576 + 16));
  check(op_work("aten::max_pool2d_with_indices_backward",
                {t("float", {16, 64, 28, 28}), t("float", {16, 64, 56, 56}), arg("[3, 3]", "ScalarList"), arg("[2, 2]", "ScalarList"),
                 arg("[1, 1]", "ScalarList"), arg("[1, 1]", "ScalarList"), arg("False"), t("long int", {16, 64, 28, 28})}),
        3211264, 4 * out + 4.0 * 3211264 + 8 * out);
}

TEST_CASE("optimizers: foreach ops and fused steps move their lists") {
  OpWork fe = op_work("aten::_foreach_addcdiv_", {list({{10}, {20}}), list({{10}, {20}}), list({{10}, {20}}), arg("1")});
  check(fe, 60, 4 * (90 + 30));
  CHECK(fe.assumption != nullptr);  // a TensorList's element type is not recorded
  CHECK(fe.cls == KernelClass::Elementwise);
  CHECK(op_work("aten::_foreach_add_", {list({{}}), list({{}}), arg("1")}).model == WorkModel::NoShapes);
  // AdamW: params, grads and both moments read; all but the grads written.
  check(op_work("aten::_fused_adamw_", {list({{10}, {20}}), list({{10}, {20}}), list({{10}, {20}}), list({{10}, {20}}), list({{}}),
                                        list({{}, {}}), arg("0.001")}),
        12 * 30, 4 * 30 * 7);
  check(op_work("aten::_fused_sgd_", {list({{10}, {20}}), list({{10}, {20}}), list({{10}, {20}}), arg("0")}), 4 * 30, 4 * 30 * 5);
  OpWork cat = op_work("aten::cat", {list({{2, 3}, {4, 3}}), arg("0")});
  check(cat, 0, 2 * 4 * 18);
  CHECK(cat.cls == KernelClass::Copy);
}

TEST_CASE("ops the model does not know, or known ones without shapes, say so") {
  OpWork w = op_work("vllm::moe_forward", {t("c10::BFloat16", {888, 3072})});
  CHECK(w.model == WorkModel::Unknown);
  CHECK(w.flops == 0);
  CHECK_FALSE(has_work_model("vllm::moe_forward"));
  CHECK(op_work("aten::mm", {}).model == WorkModel::NoShapes);
  CHECK(op_work("aten::mm", {t("float", {}), t("float", {4, 4})}).model == WorkModel::NoShapes);
  CHECK(has_work_model("aten::_foreach_mul_"));
  CHECK(op_class("aten::convolution_backward") == KernelClass::Conv);
  CHECK(op_class("aten::unknown_thing") == KernelClass::Other);
  CHECK(std::string(kernel_class_name(KernelClass::Attention)) == "attention");
}
