// Finding the input files.
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <ductwork/step.hpp>

namespace wordcount {

namespace fs = std::filesystem;

// ListFiles: directory path (string) -> sorted list of the paths of the
// regular files directly inside it (not recursive; names starting with '.'
// skipped). Fails with ductwork::ArgumentError when the path is not an
// existing directory, and with std::filesystem::filesystem_error when it
// cannot be read.
class ListFiles : public ductwork::Step {
 public:
  ductwork::Json execute(ductwork::StepContext& ctx) override {
    const std::string& dir = ctx.arg(0).as_string();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw ductwork::ArgumentError("ListFiles: \"" + dir + "\" is not an existing directory");
    }
    std::vector<std::string> paths;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      std::string name = entry.path().filename().string();
      if (name.empty() || name[0] == '.' || !entry.is_regular_file()) continue;
      paths.push_back(entry.path().string());
    }
    std::sort(paths.begin(), paths.end());
    ductwork::Json::Array result(paths.begin(), paths.end());
    ctx.log(ductwork::LogLevel::kInfo,
            "found " + std::to_string(result.size()) + " files in " + dir);
    return ductwork::Json(std::move(result));
  }
};
DUCTWORK_STEP(ListFiles);

}  // namespace wordcount
