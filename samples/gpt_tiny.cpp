// A small decoder-only transformer (GPT-style: token and position embeddings, pre-norm
// blocks of causal self-attention and a GELU MLP, a language-model head) trained on a
// text it generates itself. It shows where a transformer's memory goes:
//   - attention keeps a batch x heads x T x T probability tensor per layer for backward,
//     so `--seq 256` holds four times the attention memory of `--seq 128`;
//   - `--checkpoint` runs each block under activation checkpointing: only the blocks'
//     inputs are kept, and backward recomputes the rest, so the activation peak falls;
//   - `--accumulate K` splits the batch into K micro-batches: the same update, a peak
//     that follows the micro-batch;
//   - `--bf16` runs the forward under bfloat16 autocast: activations in 2 bytes, a
//     bfloat16 copy of each weight beside its float32 master, the loss in float32.
//
//   gpt_tiny [--steps N] [--batch B] [--seq T] [--layers L] [--embd C] [--heads H]
//            [--accumulate K] [--checkpoint] [--bf16]
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;
namespace F = memlens::nn::functional;

namespace {

struct Options {
  int steps = 4, batch = 8, seq = 64, layers = 2, embd = 64, heads = 4, accumulate = 1;
  bool checkpoint = false, bf16 = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--checkpoint" || flag == "--bf16") {
      (flag == "--bf16" ? o.bf16 : o.checkpoint) = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument("option " + flag + " needs a value");
    int v = std::stoi(argv[++i]);
    if (flag == "--steps") o.steps = v;
    else if (flag == "--batch") o.batch = v;
    else if (flag == "--seq") o.seq = v;
    else if (flag == "--layers") o.layers = v;
    else if (flag == "--embd") o.embd = v;
    else if (flag == "--heads") o.heads = v;
    else if (flag == "--accumulate") o.accumulate = v;
    else
      throw std::invalid_argument("unknown option " + flag +
                                  " (expected --steps, --batch, --seq, --layers, --embd, --heads, --accumulate, --checkpoint, --bf16)");
  }
  if (o.steps < 1 || o.batch < 1 || o.seq < 1 || o.layers < 1 || o.embd < 1 || o.heads < 1 || o.accumulate < 1)
    throw std::invalid_argument("options must be positive");
  if (o.embd % o.heads != 0) throw std::invalid_argument("--embd must be a multiple of --heads");
  if (o.batch % o.accumulate != 0) throw std::invalid_argument("--batch must be a multiple of --accumulate");
  return o;
}

// Sentences from a small grammar, drawn with a fixed seed: a text with structure to learn.
std::string make_text(std::size_t length) {
  const std::vector<std::string> subjects{"the cat", "a dog", "the model", "my gpu", "the allocator", "a tensor"},
      verbs{"sees", "frees", "holds", "caches", "copies", "wants"},
      objects{"the memory", "a block", "every segment", "the peak", "its gradient", "one more byte"};
  std::mt19937 rng(42);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  std::string text;
  while (text.size() < length) text += pick(subjects) + " " + pick(verbs) + " " + pick(objects) + ". ";
  return text;
}

class CausalSelfAttention : public nn::Module {
 public:
  CausalSelfAttention(std::int64_t embd, std::int64_t heads)
      : heads_(heads), qkv_(std::make_shared<nn::Linear>(embd, 3 * embd)), proj_(std::make_shared<nn::Linear>(embd, embd)) {
    register_module("qkv", qkv_);
    register_module("proj", proj_);
  }
  Tensor forward(const Tensor& x) override {
    const std::int64_t b = x.size(0), t = x.size(1), c = x.size(2), d = c / heads_;
    Tensor qkv = (*qkv_)(x);
    auto head = [&](std::int64_t i) { return qkv.narrow(2, i * c, c).view({b, t, heads_, d}).transpose(1, 2); };
    Tensor y = F::scaled_dot_product_attention(head(0), head(1), head(2), Tensor(), 0, /*is_causal=*/true);
    return (*proj_)(y.transpose(1, 2).reshape({b, t, c}));
  }

 private:
  std::int64_t heads_;
  std::shared_ptr<nn::Linear> qkv_, proj_;
};

class Block : public nn::Module {
 public:
  Block(std::int64_t embd, std::int64_t heads)
      : ln1_(std::make_shared<nn::LayerNorm>(Shape{embd})), attn_(std::make_shared<CausalSelfAttention>(embd, heads)),
        ln2_(std::make_shared<nn::LayerNorm>(Shape{embd})),
        mlp_(std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Linear>(embd, 4 * embd), std::make_shared<nn::GELU>(),
            std::make_shared<nn::Linear>(4 * embd, embd)})) {
    register_module("ln1", ln1_);
    register_module("attn", attn_);
    register_module("ln2", ln2_);
    register_module("mlp", mlp_);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x + (*attn_)((*ln1_)(x));
    return h + (*mlp_)((*ln2_)(h));
  }

 private:
  std::shared_ptr<nn::LayerNorm> ln1_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<nn::LayerNorm> ln2_;
  std::shared_ptr<nn::Sequential> mlp_;
};

class Gpt : public nn::Module {
 public:
  Gpt(std::int64_t vocab, const Options& o)
      : checkpoint_(o.checkpoint), tokens_(std::make_shared<nn::Embedding>(vocab, o.embd)),
        positions_(std::make_shared<nn::Embedding>(o.seq, o.embd)), ln_f_(std::make_shared<nn::LayerNorm>(Shape{o.embd})),
        head_(std::make_shared<nn::Linear>(o.embd, vocab, false)) {
    register_module("tokens", tokens_);
    register_module("positions", positions_);
    for (int i = 0; i < o.layers; ++i) {
      blocks_.push_back(std::make_shared<Block>(o.embd, o.heads));
      register_module("block" + std::to_string(i), blocks_.back());
    }
    register_module("ln_f", ln_f_);
    register_module("head", head_);
  }
  // idx: [B, T] token ids -> logits [B, T, vocab].
  Tensor forward(const Tensor& idx) override {
    Tensor pos = arange(idx.size(1), TensorOptions().dtype(kInt64).device(idx.device()));
    Tensor x = (*tokens_)(idx) + (*positions_)(pos);
    for (auto& block : blocks_) {
      if (checkpoint_) x = checkpoint([block](const Tensor& in) { return (*block)(in); }, x);
      else x = (*block)(x);
    }
    return (*head_)((*ln_f_)(x));
  }

 private:
  bool checkpoint_;
  std::shared_ptr<nn::Embedding> tokens_, positions_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<nn::LayerNorm> ln_f_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  manual_seed(0);
  Device dev("cuda");

  // The text as character ids, moved to the device once.
  const std::string text = make_text(16384);
  std::vector<int> id_of(256, -1);
  std::int64_t vocab = 0;
  for (unsigned char ch : text)
    if (id_of[ch] < 0) id_of[ch] = static_cast<int>(vocab++);
  std::vector<double> ids;
  for (unsigned char ch : text) ids.push_back(id_of[ch]);
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n <= o.seq + 1) throw std::invalid_argument("--seq is longer than the text");
  Tensor data = tensor(ids, {n}, kInt64).to(dev);

  Gpt model(vocab, o);
  model.to(dev);
  optim::AdamW opt(model.parameters(), {.lr = 3e-3});
  nn::CrossEntropyLoss criterion;
  const std::int64_t micro = o.batch / o.accumulate;
  std::mt19937_64 text_rng(7);

  double last = 0;
  for (int step = 0; step < o.steps; ++step) {
    opt.zero_grad();
    for (int k = 0; k < o.accumulate; ++k) {
      // Windows of seq characters at random places: the input and, one later, the targets.
      std::vector<Tensor> inputs, targets;
      for (std::int64_t i = 0; i < micro; ++i) {
        std::int64_t at = static_cast<std::int64_t>(text_rng() % static_cast<std::uint64_t>(n - o.seq - 1));
        inputs.push_back(data.narrow(0, at, o.seq).unsqueeze(0));
        targets.push_back(data.narrow(0, at + 1, o.seq).unsqueeze(0));
      }
      Tensor x = cat(inputs), y = cat(targets);
      Tensor loss;
      {
        profiler::Scope forward("forward");
        AutocastGuard autocast(kBFloat16, o.bf16);
        Tensor logits = model(x);
        loss = criterion(logits.reshape({micro * o.seq, vocab}), y.reshape({-1})) / static_cast<double>(o.accumulate);
      }
      {
        profiler::Scope backward("backward");
        loss.backward();
      }
      last = loss.item<double>() * o.accumulate;
    }
    nn::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    profiler::step();
  }
  std::printf("gpt_tiny: %d steps of %d x %d tokens (%d micro-batches), %d layers, loss %.4f, peak %s on %s%s%s\n",
              o.steps, o.batch, o.seq, o.accumulate, o.layers, last, format_bytes(max_memory_allocated(dev)).c_str(),
              dev.str().c_str(), o.checkpoint ? ", checkpointed" : "", o.bf16 ? ", bfloat16 autocast" : "");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpt_tiny: error: %s\n", e.what());
  return 1;
}
