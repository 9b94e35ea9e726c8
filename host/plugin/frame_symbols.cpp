#include "plugin/frame_symbols.h"

#include <elf.h>

#include <ductwork/detail/backtrace.hpp>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace ductwork {
namespace {

// At most this much of a plugin file is read for its symbols.
constexpr std::size_t kMaxElfBytes = 256u << 20;

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(in.tellg());
  if (size > kMaxElfBytes) return false;
  out->resize(size);
  in.seekg(0);
  return static_cast<bool>(in.read(out->data(), static_cast<std::streamsize>(size)));
}

template <class T>
bool read_at(const std::string& data, uint64_t offset, T* out) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
  std::memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

}  // namespace

FrameSymbols::FrameSymbols(std::string loaded_from, std::string shown_as)
    : loaded_from_(std::move(loaded_from)), shown_as_(std::move(shown_as)) {}

void FrameSymbols::read_symbols() const {
  std::string data;
  if (!read_file(shown_as_, &data)) return;
  Elf64_Ehdr header;
  if (!read_at(data, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!read_at(data, header.e_shoff + i * sizeof(Elf64_Shdr), &sections[i])) return;
  }
  // .symtab names every function (hidden ones too); .dynsym only exported.
  for (uint32_t wanted : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
    for (const Elf64_Shdr& table : sections) {
      if (table.sh_type != wanted || table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= sections.size()) continue;
      const Elf64_Shdr& strings = sections[table.sh_link];
      for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size; at += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        if (!read_at(data, table.sh_offset + at, &sym)) return;
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 || sym.st_size == 0) continue;
        if (sym.st_name >= strings.sh_size || strings.sh_offset + sym.st_name >= data.size()) continue;
        const char* name = data.data() + strings.sh_offset + sym.st_name;
        std::size_t max = data.size() - (strings.sh_offset + sym.st_name);
        std::string mangled(name, strnlen(name, max));
        functions_.emplace(sym.st_value, Function{sym.st_size, detail::demangle(mangled.c_str())});
      }
    }
    if (!functions_.empty()) return;
  }
}

const FrameSymbols::Function* FrameSymbols::function_at(uint64_t offset, uint64_t* start) const {
  std::call_once(read_once_, [this] { read_symbols(); });
  auto it = functions_.upper_bound(offset);
  if (it == functions_.begin()) return nullptr;
  --it;
  if (offset >= it->first + it->second.size) return nullptr;
  *start = it->first;
  return &it->second;
}

std::string FrameSymbols::symbolise(const std::string& backtrace) const {
  if (loaded_from_.empty() || backtrace.find(loaded_from_) == std::string::npos) return backtrace;
  std::istringstream in(backtrace);
  std::string out;
  for (std::string frame; std::getline(in, frame);) {
    if (!out.empty()) out += '\n';
    if (frame.compare(0, loaded_from_.size(), loaded_from_) != 0) {
      out += frame;
      continue;
    }
    std::string rest = frame.substr(loaded_from_.size());  // "(+0x119af) [0x7f...]" or "(sym+0x1f) [...]"
    if (rest.compare(0, 4, "(+0x") == 0) {
      std::size_t close = rest.find(')');
      uint64_t offset = 0, start = 0;
      if (close != std::string::npos && std::sscanf(rest.c_str() + 4, "%lx", &offset) == 1) {
        if (const Function* f = function_at(offset, &start)) {
          char delta[32];
          std::snprintf(delta, sizeof delta, "+0x%lx", static_cast<unsigned long>(offset - start));
          rest = "(" + f->name + delta + rest.substr(close);
        }
      }
    }
    out += shown_as_ + rest;
  }
  return out;
}

}  // namespace ductwork
