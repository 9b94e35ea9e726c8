#pragma once

#include <string>
#include <vector>

namespace ductwork {

// The candidate closest to `word` by edit distance (case-insensitive), when
// it is close enough to be a likely typo: only a difference of case for
// words of 1-2 characters, at most 1 edit up to 4 characters, 2 up to 8, 3
// beyond. A C++-qualified candidate ("billing::Charge") is also compared by
// its last name ("Charge"). Empty when none is.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// ", did you mean 'X'?" for closest_match, or "" — to append to an error.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ductwork
