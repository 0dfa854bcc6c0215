#include "sched/fair_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace assay {
namespace {

std::vector<std::string> Drain(FairQueue& q) {
  std::vector<std::string> out;
  while (auto j = q.Pop()) out.push_back(*j);
  return out;
}

TEST(FairQueueTest, FifoWithinOneKey) {
  FairQueue q;
  q.Push("a", "1");
  q.Push("a", "2");
  q.Push("a", "3");
  EXPECT_EQ(Drain(q), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_TRUE(q.empty());
}

TEST(FairQueueTest, HeavyKeyDoesNotStarveLightKey) {
  FairQueue q;
  for (int i = 0; i < 100; ++i) q.Push("heavy", "h" + std::to_string(i));
  q.Push("light", "l0");
  EXPECT_EQ(q.Position("l0"), 2);
  auto order = Drain(q);
  EXPECT_EQ(order[0], "h0");
  EXPECT_EQ(order[1], "l0");
}

TEST(FairQueueTest, PositionMatchesPopOrder) {
  FairQueue q;
  q.Push("a", "a1");
  q.Push("a", "a2");
  q.Push("a", "a3");
  q.Push("b", "b1");
  q.Push("c", "c1");
  q.Push("c", "c2");
  FairQueue copy = q;
  auto order = Drain(copy);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(q.Position(order[i]), static_cast<int>(i + 1)) << order[i];
}

TEST(FairQueueTest, RemoveKeepsOrderAndSize) {
  FairQueue q;
  q.Push("a", "a1");
  q.Push("b", "b1");
  q.Push("a", "a2");
  EXPECT_TRUE(q.Remove("b1"));
  EXPECT_FALSE(q.Remove("b1"));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_FALSE(q.Position("b1").has_value());
  EXPECT_EQ(Drain(q), (std::vector<std::string>{"a1", "a2"}));
}

}  // namespace
}  // namespace assay
