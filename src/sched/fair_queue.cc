#include "sched/fair_queue.h"

#include <algorithm>
#include <vector>

namespace assay {

void FairQueue::Push(const std::string& key, const std::string& job_id) {
  auto& q = per_key_[key];
  if (q.empty()) rotation_.push_back(key);
  q.push_back(job_id);
  key_of_[job_id] = key;
  ++size_;
}

std::optional<std::string> FairQueue::Pop() {
  if (rotation_.empty()) return std::nullopt;
  std::string key = rotation_.front();
  rotation_.pop_front();
  auto it = per_key_.find(key);
  std::string job = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) {
    per_key_.erase(it);
  } else {
    rotation_.push_back(key);  // served: go to the back of the rotation
  }
  key_of_.erase(job);
  --size_;
  return job;
}

bool FairQueue::Remove(const std::string& job_id) {
  auto k = key_of_.find(job_id);
  if (k == key_of_.end()) return false;
  std::string key = k->second;
  key_of_.erase(k);
  auto& q = per_key_[key];
  q.erase(std::find(q.begin(), q.end(), job_id));
  if (q.empty()) {
    per_key_.erase(key);
    rotation_.remove(key);
  }
  --size_;
  return true;
}

std::optional<int> FairQueue::Position(const std::string& job_id) const {
  auto k = key_of_.find(job_id);
  if (k == key_of_.end()) return std::nullopt;
  const auto& q = per_key_.at(k->second);
  size_t depth = static_cast<size_t>(std::find(q.begin(), q.end(), job_id) - q.begin());
  // Round r (0-based) serves the r-th job of every key that still has one.
  int pos = 0;
  for (const auto& key : rotation_) {
    const auto& other = per_key_.at(key);
    if (key == k->second) {
      pos += static_cast<int>(depth) + 1;
    } else {
      // Keys before ours in the rotation get depth+1 turns before ours; keys after get depth.
      bool before = true;
      for (const auto& kk : rotation_) {
        if (kk == k->second) {
          before = false;
          break;
        }
        if (kk == key) break;
      }
      size_t turns = before ? depth + 1 : depth;
      pos += static_cast<int>(std::min(other.size(), turns));
    }
  }
  return pos;
}

}  // namespace assay
