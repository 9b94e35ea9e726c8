// Lets GoogleTest print a Json in failure messages as its JSON text.
#ifndef DUCTWORK_TESTS_SDK_JSON_PRINT_H
#define DUCTWORK_TESTS_SDK_JSON_PRINT_H

#include <ostream>

#include <ductwork/json.hpp>

namespace ductwork {

inline void PrintTo(const Json& value, std::ostream* os) {
  try {
    *os << value.dump();
  } catch (const JsonError& e) {
    *os << "<unprintable Json: " << e.what() << ">";
  }
}

}  // namespace ductwork

#endif  // DUCTWORK_TESTS_SDK_JSON_PRINT_H
