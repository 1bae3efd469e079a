// Debian's libgloo-dev (0.0~git20220518) ships gloo/transport/tcp/pair.h but
// not the gloo/common/memory.h it includes. gloo_interrupt.cc needs pair.h for
// one call (tcp::Pair::signalExceptionExternal, which wakes a collective
// blocked on a rank that went silent), so this header declares the three
// non-owning pointer templates pair.h names, with the layout of gloo's (one
// shared or weak pointer each). Nothing here is instantiated by Rill: no
// tcp::Pair or unbound buffer is built or copied outside libgloo.
//
// It is found with -idirafter (actors/distributed/CMakeLists.txt): a Gloo that
// installs its own memory.h takes precedence.
#pragma once

#include <memory>

namespace gloo {

// A shared_ptr to an object owned elsewhere (its deleter does nothing), from
// which weak pointers are taken.
template <typename T>
class ShareableNonOwningPtr {
 public:
  explicit ShareableNonOwningPtr(T* ptr) : ptr_(ptr, [](T*) {}) {}

 private:
  std::shared_ptr<T> ptr_;
  template <typename U>
  friend class WeakNonOwningPtr;
};

// A pointer that may be locked while the object lives.
template <typename T>
class NonOwningPtr {
 public:
  NonOwningPtr() = default;
  explicit NonOwningPtr(std::shared_ptr<T> ptr) : ptr_(std::move(ptr)) {}
  T* get() const { return ptr_.get(); }
  T* operator->() const { return ptr_.get(); }
  explicit operator bool() const { return static_cast<bool>(ptr_); }

 private:
  std::shared_ptr<T> ptr_;
};

template <typename T>
class WeakNonOwningPtr {
 public:
  WeakNonOwningPtr() = default;
  explicit WeakNonOwningPtr(const ShareableNonOwningPtr<T>& ptr) : ptr_(ptr.ptr_) {}
  NonOwningPtr<T> lock() const { return NonOwningPtr<T>(ptr_.lock()); }

 private:
  std::weak_ptr<T> ptr_;
};

}  // namespace gloo
