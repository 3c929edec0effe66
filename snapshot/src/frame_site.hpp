#pragma once
// The one rule that picks an event's site from a PyTorch stack, innermost frame first:
// the user's own Python code if the stack has any, else the autograd node that ran (the
// backward pass runs on the engine's thread, with no Python frame at all).
#include <string>
#include <string_view>

namespace memlens::snapshot {

// A .py file outside the framework: not under site-packages or dist-packages, not
// Python's own library (/lib/pythonX.Y/), not PyTorch's sources (/torch/).
bool is_user_python_file(std::string_view file);

// "DivBackward0" for "torch::autograd::generated::DivBackward0::apply(...)", "engine" for
// another frame of torch::autograd::Engine, "" otherwise.
std::string autograd_node(std::string_view function);

// Whether a Python frame matches a --step-at glob: its function ("step") or its file stem
// and function ("optimizers.step").
bool frame_matches(const std::string& pattern, std::string_view file, std::string_view function);

// A shell glob ('*' any run, '?' one character, '[...]' a set), by the C library's fnmatch.
bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace memlens::snapshot
