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
  T* values() { return values_.data(); }
  void Run() { algorithm_.run(); }

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

namespace {

// A position in values laid out as `parts` one after the other, that copies
// the next n of them out or in.
template <typename T>
class PartsCursor {
 public:
  explicit PartsCursor(std::span<const std::span<T>> parts) : parts_(parts) {}

  void CopyOut(T* to, size_t n) {
    Walk(n, [&](T* at, size_t k) {
      std::memcpy(to, at, k * sizeof(T));
      to += k;
    });
  }

  // The next n values = from[0..n) * scale.
  void CopyIn(const T* from, size_t n, T scale) {
    Walk(n, [&](T* at, size_t k) {
      if (scale == T(1)) {
        std::memcpy(at, from, k * sizeof(T));
      } else {
        for (size_t i = 0; i < k; ++i) at[i] = from[i] * scale;
      }
      from += k;
    });
  }

 private:
  template <typename F>
  void Walk(size_t n, F&& visit) {
    while (n > 0) {
      const std::span<T>& part = parts_[part_];
      const size_t k = std::min(n, part.size() - offset_);
      if (k > 0) visit(part.data() + offset_, k);
      n -= k;
      offset_ += k;
      if (offset_ == part.size()) {
        ++part_;
        offset_ = 0;
      }
    }
  }

  std::span<const std::span<T>> parts_;
  size_t part_ = 0;
  size_t offset_ = 0;
};

}  // namespace

template <typename T>
void SyncAllreduce<T>::Run(std::span<const std::span<T>> parts, T scale) {
  size_t count = 0;
  for (const std::span<T>& part : parts) count += part.size();
  PartsCursor<T> in(parts), out(parts);
  const size_t piece = stages_.front()->size();
  for (size_t at = 0; at < count; at += piece) {
    const size_t n = std::min(piece, count - at);
    // The smallest stage that holds n (the largest holds any piece).
    Stage& stage = **std::find_if(stages_.rbegin(), stages_.rend(),
                                  [n](const std::unique_ptr<Stage>& s) { return s->size() >= n; });
    in.CopyOut(stage.values(), n);
    std::fill(stage.values() + n, stage.values() + stage.size(), T(0));
    stage.Run();
    out.CopyIn(stage.values(), n, scale);
  }
}

template class SyncAllreduce<float>;
template class SyncAllreduce<double>;

}  // namespace rill
