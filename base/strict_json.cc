#include "base/strict_json.h"

#include <iterator>
#include <map>
#include <vector>

namespace dv {
namespace {

// An input iterator over the text that counts the lines it has passed, so that the parser's
// callback knows where it is: when a key is reported, the parser has read up to the key's
// closing quote.
class LineCountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  LineCountingIterator(const char* p, size_t* line) : p_(p), line_(line) {}
  reference operator*() const { return *p_; }
  LineCountingIterator& operator++() {
    if (*p_ == '\n') ++*line_;
    ++p_;
    return *this;
  }
  LineCountingIterator operator++(int) {
    LineCountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const LineCountingIterator& other) const { return p_ == other.p_; }
  bool operator!=(const LineCountingIterator& other) const { return p_ != other.p_; }

 private:
  const char* p_;
  size_t* line_;
};

struct DuplicateKey {};

size_t LineOfByte(std::string_view text, size_t byte) {
  if (byte > text.size()) byte = text.size();
  size_t line = 1;
  for (size_t i = 0; i < byte; ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

std::string JsonProblem::Describe() const {
  return kind == Kind::kMalformed ? "malformed JSON (" + message + ")" : message;
}

std::string JsonProblem::Where(const std::string& source) const {
  return source + ":" + std::to_string(line) + ": " + Describe();
}

bool ParseJsonStrict(std::string_view text, nlohmann::json& out, JsonProblem& problem) {
  size_t line = 1;
  // The keys seen so far in each object being parsed, innermost last, with their lines.
  std::vector<std::map<std::string, size_t>> open_objects;
  const nlohmann::json::parser_callback_t check = [&](int, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    switch (event) {
      case nlohmann::json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case nlohmann::json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case nlohmann::json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        const auto [it, fresh] = open_objects.back().emplace(key, line);
        if (!fresh) {
          problem.kind = JsonProblem::Kind::kDuplicateKey;
          problem.line = line;
          problem.message =
              "duplicate key " +
              nlohmann::json(key).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
              " (first at line " + std::to_string(it->second) + ")";
          throw DuplicateKey{};
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    out = nlohmann::json::parse(LineCountingIterator(text.data(), &line),
                                LineCountingIterator(text.data() + text.size(), &line), check);
  } catch (const DuplicateKey&) {
    return false;
  } catch (const nlohmann::json::parse_error& e) {
    problem.line = LineOfByte(text, e.byte == 0 ? 0 : e.byte - 1);
    problem.kind = JsonProblem::Kind::kMalformed;
    problem.message = e.what();
    return false;
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double ("1e400"): the parser throws this, not a parse_error (found by
    // fuzz_hf_config, tests/fuzz/corpus/hf_config/number-overflow.json). The lexer stopped
    // right after the number.
    problem.kind = JsonProblem::Kind::kMalformed;
    problem.line = line;
    problem.message = e.what();
    return false;
  }
  return true;
}

nlohmann::json ParseJsonStrict(std::string_view text, const std::string& source) {
  nlohmann::json out;
  JsonProblem problem;
  if (!ParseJsonStrict(text, out, problem)) throw JsonError(problem.Where(source));
  return out;
}

}  // namespace dv
