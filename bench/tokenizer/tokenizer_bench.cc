// Tokenizer throughput on one core, in bytes of input (encode) or output (decode) per second.
// The prose is generated in-process: English words drawn with Zipf-like frequencies from a fixed
// list by a fixed-seed std::mt19937 (whose output the standard specifies), so every machine
// measures the same 1 MiB text.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace dv::tok {
namespace {

constexpr size_t kTextBytes = 1 << 20;

// Roughly in order of frequency in English text; the draw weights word k by 1 / (k + 1).
const char* const kWords[] = {
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "that",
    "is",
    "was",
    "he",
    "for",
    "it",
    "with",
    "as",
    "his",
    "on",
    "be",
    "at",
    "by",
    "I",
    "had",
    "not",
    "are",
    "but",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "her",
    "all",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
    "morning",
    "river",
    "window",
    "garden",
    "letter",
    "winter",
    "summer",
    "evening",
    "mountain",
    "village",
    "harbour",
    "question",
    "answer",
    "reason",
    "simple",
    "careful",
    "quiet",
    "bright",
    "heavy",
    "narrow",
    "ancient",
    "modern",
    "gentle",
    "sudden",
    "government",
    "remembered",
    "understanding",
    "particularly",
    "nevertheless",
    "extraordinary",
    "circumstances",
    "conversation",
    "immediately",
    "thoughtfully",
    "independence",
    "photograph",
    "Wednesday",
    "London",
    "Elizabeth",
};

std::string EnglishProse(size_t bytes) {
  constexpr size_t kCount = sizeof(kWords) / sizeof(kWords[0]);
  std::vector<uint64_t> cumulative(kCount);
  uint64_t total = 0;
  for (size_t k = 0; k < kCount; ++k) cumulative[k] = total += 1'000'000 / (k + 1);
  std::mt19937 rng(18);
  std::string text;
  bool sentence_start = true;
  while (text.size() < bytes) {
    const uint64_t draw = rng() % total;
    size_t k = 0;
    while (cumulative[k] <= draw) ++k;
    std::string word = kWords[k];
    if (sentence_start && word[0] >= 'a' && word[0] <= 'z')
      word[0] = static_cast<char>(word[0] - 32);
    if (!sentence_start) text += ' ';
    text += word;
    sentence_start = false;
    const auto roll = rng() % 100;
    if (roll < 6) {
      text += ".";
      sentence_start = true;
    } else if (roll < 10) {
      text += ",";
    } else if (roll < 11) {
      text += "'s";
    } else if (roll < 12) {
      text += ' ';
      text += std::to_string(rng() % 2000);
    }
    if (sentence_start && rng() % 8 == 0) text += "\n\n";
  }
  return text;
}

// Made-up words from random syllables: almost no word repeats, so the word cache never helps and
// this measures the pre-tokenizer and merge loop alone.
std::string UniqueWords(size_t bytes) {
  const char* const syllables[] = {"ka",  "lo", "mi", "str", "an",  "ve", "tion",
                                   "pre", "qu", "or", "ble", "ing", "th", "ou",
                                   "gr",  "el", "x",  "ph",  "ad",  "ee"};
  std::mt19937 rng(19);
  std::string text;
  while (text.size() < bytes) {
    if (!text.empty()) text += ' ';
    for (auto n = 2 + rng() % 4; n > 0; --n) text += syllables[rng() % 20];
  }
  return text;
}

std::string Multilingual(size_t bytes) {
  const std::string sample =
      "\xE4\xBB\x8A\xE5\xA4\xA9\xE5\xA4\xA9\xE6\xB0\x94\xE5\xBE\x88\xE5\xA5\xBD\xEF\xBC\x8C "
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82, \xD0\xBC\xD0\xB8\xD1\x80! "
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 caf\xC3\xA9 e\xCC\x81 \xF0\x9F\x98\x80 "
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 12345\n";
  std::string text;
  while (text.size() < bytes) text += sample;
  return text;
}

const Tokenizer* LoadOrSkip(benchmark::State& state) {
  static const std::unique_ptr<Tokenizer> tokenizer = []() -> std::unique_ptr<Tokenizer> {
    try {
      return std::make_unique<Tokenizer>(Tokenizer::FromFile(DefaultTokenizerPath()));
    } catch (const TokenizerError&) {
      return nullptr;
    }
  }();
  if (tokenizer == nullptr) state.SkipWithError("no tokenizer.json (set DETVERIFY_TOKENIZER)");
  return tokenizer.get();
}

void EncodeText(benchmark::State& state, const std::string& text) {
  const Tokenizer* tok = LoadOrSkip(state);
  if (tok == nullptr) return;
  size_t tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tok->Encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

// Steady state: the word cache is warm after the first iteration, as in a long-running process.
void BM_EncodeEnglishProse(benchmark::State& state) {
  static const std::string text = EnglishProse(kTextBytes);
  EncodeText(state, text);
}
BENCHMARK(BM_EncodeEnglishProse)->Unit(benchmark::kMillisecond);

// Every iteration starts from a freshly loaded tokenizer (loading not timed): an empty cache.
void BM_EncodeEnglishProseColdCache(benchmark::State& state) {
  static const std::string text = EnglishProse(kTextBytes);
  if (LoadOrSkip(state) == nullptr) return;
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = std::make_unique<Tokenizer>(Tokenizer::FromFile(DefaultTokenizerPath()));
    state.ResumeTiming();
    benchmark::DoNotOptimize(fresh->Encode(text).data());
    state.PauseTiming();
    fresh.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_EncodeEnglishProseColdCache)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_EncodeUniqueWords(benchmark::State& state) {
  static const std::string text = UniqueWords(kTextBytes);
  if (LoadOrSkip(state) == nullptr) return;
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = std::make_unique<Tokenizer>(Tokenizer::FromFile(DefaultTokenizerPath()));
    state.ResumeTiming();
    benchmark::DoNotOptimize(fresh->Encode(text).data());
    state.PauseTiming();
    fresh.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_EncodeUniqueWords)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_EncodeMultilingual(benchmark::State& state) {
  static const std::string text = Multilingual(kTextBytes);
  EncodeText(state, text);
}
BENCHMARK(BM_EncodeMultilingual)->Unit(benchmark::kMillisecond);

void BM_DecodeEnglishProse(benchmark::State& state) {
  const Tokenizer* tok = LoadOrSkip(state);
  if (tok == nullptr) return;
  static const std::string text = EnglishProse(kTextBytes);
  const std::vector<int32_t> ids = tok->Encode(text);
  for (auto _ : state) benchmark::DoNotOptimize(tok->Decode(ids).data());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_DecodeEnglishProse)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dv::tok

BENCHMARK_MAIN();
