// The queue of jobs waiting to be compiled/run, fair across API keys: keys are
// served round-robin, and within a key jobs go first-in first-out. A key that
// submits a thousand jobs delays another key's single job by at most one job
// per key ahead of it, not a thousand.
//
// Thread-safety: not thread-safe; the Scheduler guards it with its mutex.
#pragma once

#include <cstddef>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <string>

namespace assay {

class FairQueue {
 public:
  void Push(const std::string& key, const std::string& job_id);
  // Next job in fair order, or nullopt when empty.
  std::optional<std::string> Pop();
  // Removes a job wherever it is; false if absent.
  bool Remove(const std::string& job_id);
  // 1-based position in the order Pop() would return jobs if nothing else arrived.
  std::optional<int> Position(const std::string& job_id) const;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  // Keys with waiting jobs, in the order they will be served next.
  std::list<std::string> rotation_;
  std::map<std::string, std::deque<std::string>> per_key_;
  std::map<std::string, std::string> key_of_;  // job id -> key
  size_t size_ = 0;
};

}  // namespace assay
