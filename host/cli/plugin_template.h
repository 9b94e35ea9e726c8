#pragma once

#include <string>
#include <vector>

namespace ductwork::cli {

// One file of the plugin template (sdk/template, embedded at build time):
// its path relative to the new folder and its text, both with the
// placeholders @NAME@ (the plugin name) and @CAMEL@ (its CamelCase form).
struct TemplateFile {
  const char* path;
  const char* text;
};

const std::vector<TemplateFile>& plugin_template_files();
// The Python process-step folder of `new-plugin --python`
// (sdk/template-python), with the same placeholders.
const std::vector<TemplateFile>& python_template_files();

}  // namespace ductwork::cli
