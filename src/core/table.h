// Table: a plain-text table for human output on stdout. Columns are right-aligned
// except the first. Not thread-safe.
#pragma once

#include <string>
#include <vector>

namespace tessera::core {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Adds a row; it must have as many cells as the header.
  void AddRow(std::vector<std::string> row);
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Formats `v` with `digits` digits after the point.
std::string Fixed(double v, int digits);

}  // namespace tessera::core
