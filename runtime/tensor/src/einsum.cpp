// einsum lowered to views (diagonal, permute), sums and bmm, so it costs what mm costs
// and autograd comes from those ops.
#include <algorithm>
#include <map>

#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;

namespace {

struct Term {
  Tensor t;
  std::string letters;  // one letter per dim of t, all distinct
};

// Repeated letters in one operand take the diagonal ("ii->i").
Term take_diagonals(Tensor t, std::string letters) {
  for (std::size_t i = 0; i < letters.size(); ++i)
    for (std::size_t j = i + 1; j < letters.size(); ++j)
      if (letters[i] == letters[j]) {
        if (t.size(static_cast<std::int64_t>(i)) != t.size(static_cast<std::int64_t>(j)))
          throw ShapeError(std::string("einsum(): subscript ") + letters[i] +
                           " is repeated for operand but the sizes don't match, " +
                           std::to_string(t.size(static_cast<std::int64_t>(i))) +
                           " != " + std::to_string(t.size(static_cast<std::int64_t>(j))));
        t = t.diagonal(0, static_cast<std::int64_t>(i), static_cast<std::int64_t>(j));
        char c = letters[i];
        letters.erase(j, 1);
        letters.erase(i, 1);
        letters.push_back(c);
        return take_diagonals(t, letters);
      }
  return {t, letters};
}

// Sums the dims whose letters `keep` does not contain.
Term sum_out(Term in, const std::string& keep) {
  Shape dims;
  std::string rest;
  for (std::size_t i = 0; i < in.letters.size(); ++i) {
    if (keep.find(in.letters[i]) == std::string::npos) dims.push_back(static_cast<std::int64_t>(i));
    else rest.push_back(in.letters[i]);
  }
  if (dims.empty()) return in;
  return {in.t.sum(dims), rest};
}

std::int64_t letter_size(const Term& t, char c) { return t.t.size(static_cast<std::int64_t>(t.letters.find(c))); }

// Contracts two terms: letters in both that `keep` lacks are summed by a bmm.
Term contract(const Term& a, const Term& b, const std::string& keep) {
  std::string batch, a_only, b_only, summed;
  for (char c : a.letters) {
    bool in_b = b.letters.find(c) != std::string::npos;
    if (!in_b) a_only.push_back(c);
    else if (keep.find(c) != std::string::npos) batch.push_back(c);
    else summed.push_back(c);
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos) b_only.push_back(c);
  auto arrange = [](const Term& t, const std::string& order, const std::map<char, std::int64_t>& sizes) {
    Shape perm, target;
    for (char c : order) {
      perm.push_back(static_cast<std::int64_t>(t.letters.find(c)));
      target.push_back(sizes.at(c));
    }
    return t.t.permute(perm).expand(target);
  };
  std::map<char, std::int64_t> sizes;
  for (const Term* t : {&a, &b})
    for (char c : t->letters) {
      std::int64_t s = letter_size(*t, c);
      auto [it, fresh] = sizes.emplace(c, s);
      if (!fresh && it->second != s) {
        if (it->second == 1) it->second = s;
        else if (s != 1)
          throw ShapeError(std::string("einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                       "subscript ") +
                           c + " has size " + std::to_string(it->second) + " and " + std::to_string(s));
      }
    }
  auto prod = [&](const std::string& s) {
    std::int64_t n = 1;
    for (char c : s) n *= sizes.at(c);
    return n;
  };
  Tensor x = arrange(a, batch + a_only + summed, sizes).reshape({prod(batch), prod(a_only), prod(summed)});
  Tensor y = arrange(b, batch + summed + b_only, sizes).reshape({prod(batch), prod(summed), prod(b_only)});
  Shape out_shape;
  for (char c : batch + a_only + b_only) out_shape.push_back(sizes.at(c));
  return {x.bmm(y).reshape(out_shape), batch + a_only + b_only};
}

// The subscripts of each operand: the left side split at its commas.
std::vector<std::string> operand_subscripts(const std::string& lhs) {
  std::vector<std::string> inputs;
  for (std::size_t start = 0;;) {
    auto comma = lhs.find(',', start);
    inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) return inputs;
    start = comma + 1;
  }
}

// "..." stands for the dims no letter names, right-aligned across operands so they
// broadcast, as PyTorch's: each becomes a letter the equation does not use. Without an
// output, the ellipsis dims come first in it, then the letters used once.
std::string expand_ellipsis(const std::string& eq, const std::vector<Tensor>& operands) {
  const auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs = arrow == std::string::npos ? "" : eq.substr(arrow + 2);
  std::vector<std::string> inputs = operand_subscripts(lhs);
  std::string unused;
  for (char c = 'a'; c <= 'z'; ++c)
    if (eq.find(c) == std::string::npos) unused.push_back(c);
  for (char c = 'A'; c <= 'Z'; ++c)
    if (eq.find(c) == std::string::npos) unused.push_back(c);
  std::vector<std::int64_t> spans(inputs.size(), 0);
  std::int64_t widest = 0;
  for (std::size_t i = 0; i < inputs.size() && i < operands.size(); ++i) {
    auto at = inputs[i].find("...");
    if (at == std::string::npos) continue;
    if (inputs[i].find("...", at + 3) != std::string::npos)
      throw Error("einsum(): found more than one '...' in the equation for operand " + std::to_string(i));
    spans[i] = operands[i].dim() - static_cast<std::int64_t>(inputs[i].size() - 3);
    if (spans[i] < 0)
      throw ShapeError("einsum(): the number of subscripts in the equation (" + std::to_string(inputs[i].size() - 3) +
                       ") is more than the number of dimensions (" + std::to_string(operands[i].dim()) + ") for operand " +
                       std::to_string(i));
    widest = std::max(widest, spans[i]);
  }
  if (widest > static_cast<std::int64_t>(unused.size())) throw Error("einsum(): too many dims under '...'");
  const std::string all = unused.substr(0, static_cast<std::size_t>(widest));
  std::string out_lhs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::string in = inputs[i];
    if (auto at = in.find("..."); at != std::string::npos)
      in.replace(at, 3, all.substr(static_cast<std::size_t>(widest - spans[i])));
    out_lhs += (i ? "," : "") + in;
  }
  if (arrow == std::string::npos) {
    std::map<char, int> counts;
    for (char c : out_lhs)
      if (c != ',' && all.find(c) == std::string::npos) ++counts[c];
    std::string once;
    for (auto& [c, n] : counts)
      if (n == 1) once.push_back(c);
    return out_lhs + "->" + all + once;
  }
  if (auto at = rhs.find("..."); at != std::string::npos) rhs.replace(at, 3, all);
  return out_lhs + "->" + rhs;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  MEMLENS_API_ENTRY();
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  if (eq.find("...") != std::string::npos) eq = expand_ellipsis(eq, operands);
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> inputs = operand_subscripts(lhs);
  if (inputs.size() != operands.size())
    throw Error(std::string("einsum(): ") + (inputs.size() < operands.size() ? "more" : "fewer") +
                " operands were provided than specified in the equation: " + equation);
  std::map<char, int> counts;
  for (auto& in : inputs)
    for (char c : in) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw Error(std::string("einsum(): invalid subscript given at index ") + std::to_string(eq.find(c)) +
                    " in the equation string, subscripts must be in [a-zA-Z]");
      ++counts[c];
    }
  std::string output;
  if (arrow == std::string::npos) {
    for (auto& [c, n] : counts)
      if (n == 1) output.push_back(c);
  } else {
    output = eq.substr(arrow + 2);
    for (char c : output)
      if (!counts.count(c))
        throw Error(std::string("einsum(): output subscript ") + c + " does not appear in the equation for any input operand");
  }
  std::vector<Term> terms;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (static_cast<std::int64_t>(inputs[i].size()) != operands[i].dim())
      throw ShapeError("einsum(): the number of subscripts in the equation (" + std::to_string(inputs[i].size()) +
                       ") does not match the number of dimensions (" + std::to_string(operands[i].dim()) + ") for operand " +
                       std::to_string(i) + " and no ellipsis was given");
    terms.push_back(take_diagonals(operands[i], inputs[i]));
  }
  // Letters needed later: by the output or by operands not yet combined.
  auto needed_after = [&](std::size_t i) {
    std::string k = output;
    for (std::size_t j = i; j < terms.size(); ++j) k += terms[j].letters;
    return k;
  };
  Term acc = sum_out(terms[0], needed_after(1));
  for (std::size_t i = 1; i < terms.size(); ++i) {
    std::string keep = needed_after(i + 1);
    Term next = sum_out(terms[i], keep + acc.letters);
    acc = contract(acc, next, keep);
  }
  acc = sum_out(acc, output);
  Shape perm;
  for (char c : output) perm.push_back(static_cast<std::int64_t>(acc.letters.find(c)));
  return acc.t.permute(perm);
}

}  // namespace memlens
