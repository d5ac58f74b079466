#include "training/tensor.h"

#include <gtest/gtest.h>

#include "training/shape_error.h"

namespace tuner::training {
namespace {

TEST(Shape, BasicsAndBatchHelpers) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(s.without_batch(), (Shape{3, 4}));
  EXPECT_EQ(s.without_batch().with_batch(5), (Shape{5, 3, 4}));
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_THROW((Shape{1, 2, 3, 4, 5, 6, 7}), std::invalid_argument);
  EXPECT_THROW((Shape{-1}), std::invalid_argument);
}

TEST(Tensor, OwnedIsZeroedAlignedAndContiguous) {
  Tensor t(Shape{3, 5});
  EXPECT_TRUE(t.owns_memory());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  for (float v : t.span()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(t.strides()[0], 5);
  EXPECT_EQ(t.strides()[1], 1);
}

TEST(Tensor, ViewsSliceAndReshapeShareMemory) {
  Tensor t(Shape{4, 3});
  for (int64_t i = 0; i < 12; ++i) t.data()[i] = static_cast<float>(i);
  Tensor rows = t.slice(1, 3);
  EXPECT_FALSE(rows.owns_memory());
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_EQ(rows.at({0, 0}), 3.0f);
  rows.at({1, 2}) = 100.0f;
  EXPECT_EQ(t.at({2, 2}), 100.0f);
  Tensor flat = t.reshape(Shape{12});
  EXPECT_EQ(flat.at({8}), 100.0f);
  EXPECT_THROW(t.reshape(Shape{5}), ShapeError);
  EXPECT_THROW(t.slice(2, 5), ShapeError);
  EXPECT_THROW(t.at({4, 0}), std::out_of_range);
}

TEST(Tensor, StridedViewIsNotContiguous) {
  Tensor t(Shape{2, 4});
  const int64_t strides[] = {1, 2};  // a transposed view of a [4, 2] matrix
  Tensor v = Tensor::borrow(t.data(), Shape{2, 4}, strides);
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_THROW(v.fill(1.0f), ShapeError);
}

}  // namespace
}  // namespace tuner::training
