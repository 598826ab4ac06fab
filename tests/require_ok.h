// A Result's value in a test, the test stopping with the Result's message when there is none.
#pragma once

#include "core/base/status.h"

#include <doctest/doctest.h>

#include <utility>

namespace strata::test {

template <class T>
T require_ok(Result<T> r) {
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return std::move(r.value());
}

}  // namespace strata::test
