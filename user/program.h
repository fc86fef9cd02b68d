// The coroutine types of simulated programs. A thread runs one Program (its main function);
// helpers it calls are Task<T>s, lazy and resumed by symmetric transfer, so a program reads
// as sequential code and a long chain of awaits never grows the stack. Frames come from
// user::frame_alloc. A program is never interrupted between two awaits.
#pragma once
#include <cassert>
#include <coroutine>
#include <exception>
#include <utility>

#include "user/frame_pool.h"

namespace user {

struct PromiseBase {
  static void* operator new(size_t size) { return frame_alloc(size); }
  static void operator delete(void* p, size_t size) { frame_free(p, size); }
  std::suspend_always initial_suspend() noexcept { return {}; }
  void unhandled_exception() { std::terminate(); }  // programs do not throw
};

// The main coroutine of a simulated thread; owned by its user::Thread.
class [[nodiscard]] Program {
 public:
  struct promise_type : PromiseBase {
    Program get_return_object() {
      return Program(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
  };
  Program() = default;
  explicit Program(std::coroutine_handle<promise_type> h) : h_(h) {}
  Program(Program&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Program& operator=(Program&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~Program() {
    if (h_) h_.destroy();
  }
  std::coroutine_handle<> handle() const { return h_; }
  bool done() const { return !h_ || h_.done(); }

 private:
  std::coroutine_handle<promise_type> h_;
};

// A nested helper (e.g. SpinLock::lock): starts when awaited, returns to its awaiter.
template <typename T = void>
class [[nodiscard]] Task {
 public:
  struct promise_type;
  using handle_t = std::coroutine_handle<promise_type>;
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    std::coroutine_handle<> await_suspend(handle_t h) noexcept { return h.promise().continuation; }
    void await_resume() noexcept {}
  };
  struct ValueHolder {
    T value{};
    void return_value(T v) { value = std::move(v); }
  };
  struct VoidHolder {
    void return_void() {}
  };
  struct promise_type : PromiseBase, std::conditional_t<std::is_void_v<T>, VoidHolder, ValueHolder> {
    std::coroutine_handle<> continuation;
    Task get_return_object() { return Task(handle_t::from_promise(*this)); }
    FinalAwaiter final_suspend() noexcept { return {}; }
  };

  explicit Task(handle_t h) : h_(h) {}
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task(const Task&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    assert(!h_.promise().continuation && "a Task is awaited once");
    h_.promise().continuation = awaiter;
    return h_;
  }
  T await_resume() {
    if constexpr (!std::is_void_v<T>) return std::move(h_.promise().value);
  }

 private:
  handle_t h_;
};

}  // namespace user
