#include "actors/distributed/pserver_checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "rill/checkpoint.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/scope.h"

namespace rill {
namespace {

void Rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    Fail(ErrorCode::kIo, from, ": cannot rename it to ", to, ": ", std::strerror(errno));
  }
}

void Remove(const std::string& path) {
  if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
    Fail(ErrorCode::kIo, path, ": cannot remove it: ", std::strerror(errno));
  }
}

}  // namespace

PserverCheckpoints::PserverCheckpoints(const proto::ProgramDesc& program,
                                       const proto::ProgramDesc& startup, std::string path,
                                       Scope* scope)
    : program_(program),
      startup_(startup),
      path_(std::move(path)),
      previous_path_(path_ + ".prev"),
      next_path_(path_ + ".next") {
  std::error_code ec;
  Remove(next_path_);  // a save cut short: the previous and the newest are what counts
  if (std::filesystem::exists(previous_path_, ec)) {
    const int64_t step = ReadCheckpoint(program_, previous_path_).step;
    RILL_CHECK(step >= 0, kParse, previous_path_,
               ": not a parameter-server checkpoint (it has no step)");
    files_.push_back({previous_path_, step});
  }
  if (std::filesystem::exists(path_, ec)) {
    const int64_t step = LoadCheckpoint(program_, scope, path_);
    RILL_CHECK(step >= 0, kParse, path_, ": not a parameter-server checkpoint (it has no step)");
    if (!files_.empty() && files_.front().step >= step) {
      Fail(ErrorCode::kParse, previous_path_, ": the previous checkpoint is at step ",
           files_.front().step, ", not before the newest (", path_, ", step ", step,
           "): not the checkpoints of one server");
    }
    files_.insert(files_.begin(), {path_, step});
    loaded_step_ = step;
  } else if (!files_.empty()) {
    // Killed between moving the newest aside and writing the next one.
    LoadCheckpoint(program_, scope, previous_path_);
    loaded_step_ = files_.front().step;
  }
}

std::vector<int64_t> PserverCheckpoints::steps() const {
  std::vector<int64_t> steps;
  for (const File& file : files_) steps.push_back(file.step);
  if (steps.size() < 2) steps.push_back(0);
  return steps;
}

std::string PserverCheckpoints::Describe(int64_t step) const {
  for (const File& file : files_) {
    if (file.step == step) return file.path;
  }
  return step == 0 ? "the startup values" : StrCat("no checkpoint of step ", step);
}

void PserverCheckpoints::Resume(int64_t step, Scope* scope) {
  std::vector<File> kept;
  for (const File& file : files_) {
    if (file.step > step) {
      Remove(file.path);
    } else {
      kept.push_back(file);
    }
  }
  if (step != loaded_step_) {
    if (step == 0) {
      Executor().Run(startup_, scope);
    } else {
      RILL_CHECK(!kept.empty() && kept.front().step == step, kInvalidArgument,
                 "no checkpoint of step ", step, " at ", path_);
      const int64_t saved = LoadCheckpoint(program_, scope, kept.front().path);
      RILL_CHECK(saved == step, kParse, kept.front().path, ": changed since start-up (step ", saved,
                 ", was ", step, ")");
    }
    loaded_step_ = step;
  }
  // The step resumed from is the newest: the next save keeps it as the previous.
  if (!kept.empty() && kept.front().path != path_) {
    Rename(kept.front().path, path_);
    kept.front().path = path_;
  }
  files_ = kept;
}

void PserverCheckpoints::Save(const Scope& scope, int64_t step) {
  // Written in full first (and flushed), so that the newest is missing only
  // between the two renames below.
  SaveCheckpoint(program_, scope, next_path_, step);
  if (!files_.empty() && files_.front().path == path_) {
    Rename(path_, previous_path_);
    files_.front().path = previous_path_;
  }
  files_.resize(std::min<size_t>(files_.size(), 1));
  Rename(next_path_, path_);
  files_.insert(files_.begin(), {path_, step});
  loaded_step_ = step;
}

}  // namespace rill
