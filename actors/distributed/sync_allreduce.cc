#include "actors/distributed/sync_allreduce.h"

#include <algorithm>
#include <cstring>

#include "gloo/allreduce_halving_doubling.h"
#include "gloo/context.h"

namespace rill {

// A staging buffer of `size` values and the allreduce built on it.
template <typename T>
class SyncAllreduce<T>::Stage {
 public:
  Stage(const std::shared_ptr<gloo::Context>& context, size_t size)
      : values_(size), algorithm_(context, {values_.data()}, static_cast<int>(size)) {}

  size_t size() const { return values_.size(); }

  // data[0..count) summed over the ranks, count <= size().
  void Run(T* data, size_t count) {
    std::memcpy(values_.data(), data, count * sizeof(T));
    std::fill(values_.begin() + static_cast<std::ptrdiff_t>(count), values_.end(), T(0));
    algorithm_.run();
    std::memcpy(data, values_.data(), count * sizeof(T));
  }

 private:
  std::vector<T> values_;
  gloo::AllreduceHalvingDoubling<T> algorithm_;
};

template <typename T>
SyncAllreduce<T>::SyncAllreduce(const std::shared_ptr<gloo::Context>& context) {
  // A piece, then quarters down to 1 KiB (a bias or two).
  for (size_t bytes = kPieceBytes; bytes >= 1024; bytes /= 4) {
    stages_.push_back(std::make_unique<Stage>(context, bytes / sizeof(T)));
  }
}

template <typename T>
SyncAllreduce<T>::~SyncAllreduce() = default;

template <typename T>
void SyncAllreduce<T>::Run(T* data, size_t count) {
  const size_t piece = stages_.front()->size();
  for (size_t at = 0; at < count; at += piece) {
    const size_t n = std::min(piece, count - at);
    // The smallest stage that holds n (the largest holds any piece).
    auto stage = std::find_if(stages_.rbegin(), stages_.rend(),
                              [n](const std::unique_ptr<Stage>& s) { return s->size() >= n; });
    (*stage)->Run(data + at, n);
  }
}

template class SyncAllreduce<float>;
template class SyncAllreduce<double>;

}  // namespace rill
