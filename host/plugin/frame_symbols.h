#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace ductwork {

// Names the frames of a plugin's backtrace that backtrace_symbols() could
// not: a plugin built with hidden visibility shows its own frames as
// "/tmp/ductwork-plugin-XXXX/libx.so(+0x119af) [0x7f...]" (the private copy
// it was loaded from). With the plugin's ELF symbol table (.symtab, present
// unless the file was stripped) such a frame becomes
// "/usr/lib/ductwork/plugins/libx.so(ns::Step::execute(ductwork::StepContext&)+0x1f) [0x7f...]":
// the installed file, the demangled function, the offset inside it.
// Without symbols the frame keeps its "+0x..." offset, now against the
// installed file, ready for `addr2line -e FILE -f -C 0x...`.
class FrameSymbols {
 public:
  // `loaded_from`: the file the library was mapped from; `shown_as`: the
  // path to show instead (the installed plugin file, read for its symbols).
  FrameSymbols(std::string loaded_from, std::string shown_as);

  // The backtrace (one frame per line) with this plugin's frames named.
  std::string symbolise(const std::string& backtrace) const;

 private:
  struct Function {
    uint64_t size;
    std::string name;
  };
  const Function* function_at(uint64_t offset, uint64_t* start) const;
  void read_symbols() const;

  std::string loaded_from_;
  std::string shown_as_;
  mutable std::once_flag read_once_;
  mutable std::map<uint64_t, Function> functions_;  // start offset -> function
};

}  // namespace ductwork
