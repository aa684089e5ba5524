#include "apps/run/inference.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>

#include "actors/feed_split.hpp"
#include "apps/run/engine.hpp"
#include "core/error.hpp"
#include "data/npy.hpp"
#include "data/npy_dir.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/op_registry.hpp"
#include "graph/program_io.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

namespace fs = std::filesystem;

/// The `slot` variable of each `type` op (feed: Out, fetch: X), ordered by its col.
std::vector<std::string> by_column(const proto::BlockDesc& block, const std::string& type,
                                   const std::string& slot, const std::string& path) {
  const op_schema& schema = *op_registry::global().find(type);
  std::map<std::int32_t, std::string> columns;
  for (const auto& op : block.ops()) {
    if (op.type() != type) continue;
    const auto col = resolve_attributes(op, schema).get<std::int32_t>("col");
    for (const auto& s : (type == "feed" ? op.outputs() : op.inputs()))
      if (s.parameter() == slot && s.arguments_size() == 1)
        if (!columns.emplace(col, s.arguments(0)).second)
          throw error(path + ": two " + type + " ops have col " + std::to_string(col));
  }
  if (columns.empty())
    throw error(path + ": no " + type + " op; an inference model (save_inference_model) names "
                "its inputs with feed ops and its outputs with fetch ops");
  std::vector<std::string> names;
  for (auto& [col, name] : columns) names.push_back(std::move(name));
  return names;
}

/// DIR/<feed>.npy for every feed (npy_feed_file), all with the same number of rows, checked
/// against the model's declaration.
feed_map read_feeds(const inference_model& m, const var_table& declared, const std::string& dir) {
  feed_map feeds;
  const dataset read = read_npy_split(dir, m.feeds, false);
  for (const auto& [name, value] : read.feeds()) {
    const std::string path = npy_feed_file(dir, name, false);
    const var_info& want = declared.at(name);
    if (value.type() != want.type)
      throw error(path + ": feed '" + name + "' is " + to_string(value.type()) +
                  ", the model declares " + to_string(want.type));
    if (!dims_compatible(value.shape(), want.dims))
      throw error(path + ": feed '" + name + "' has shape " + to_string(value.shape()) +
                  ", the model declares " + to_string(want.dims));
    feeds.emplace(name, value);
  }
  return feeds;
}

/// OUTPUT/<name>.npy, creating the directories a name such as save_infer_model/scale_0.tmp_0
/// implies; a name that would leave OUTPUT is refused.
std::string output_file(const std::string& output, const std::string& name) {
  const fs::path relative = fs::path(name + ".npy").lexically_normal();
  if (relative.is_absolute() || relative.begin()->string() == "..")
    throw error("fetch target '" + name + "' would be written outside --output " + output);
  const fs::path file = fs::path(output) / relative;
  std::error_code failure;
  fs::create_directories(file.parent_path(), failure);
  if (failure)
    throw error("--output " + output + ": cannot create " + file.parent_path().string() + ": " +
                failure.message());
  return file.string();
}

} // namespace

inference_model load_inference_model(const std::string& path) {
  inference_model m;
  proto::ProgramDesc loaded = load_program(path);
  if (loaded.blocks_size() == 0) throw error(path + ": the program has no blocks");
  m.feeds = by_column(loaded.blocks(0), "feed", "Out", path);
  m.fetches = by_column(loaded.blocks(0), "fetch", "X", path);
  m.program = loaded;
  auto* ops = m.program.mutable_blocks(0)->mutable_ops();
  ops->erase(std::remove_if(ops->begin(), ops->end(),
                            [](const proto::OpDesc& op) {
                              return op.type() == "feed" || op.type() == "fetch";
                            }),
             ops->end());
  return m;
}

void run_inference(const run_options& o, std::ostream& out) {
  const inference_model m = load_inference_model(o.model);
  const var_table declared = validate_program(m.program, o.max_tensor_bytes);
  const std::string& dir = o.data_source.dir;
  const feed_map inputs = read_feeds(m, declared, dir);
  const param_map params = load_params(o.params, m.program);

  model_programs programs;
  proto::BlockDesc* empty = programs.startup.add_blocks(); // parameters come from --params
  empty->set_idx(0);
  empty->set_parent_idx(-1);
  programs.main = m.program;
  auto executor = make_engine(o, programs);
  for (const auto& [name, value] : params) executor->set_persistable(name, value);

  const std::int64_t rows = inputs.begin()->second.dim(0);
  std::vector<std::vector<tensor>> batches(m.fetches.size());
  std::vector<std::int64_t> batch_rows;
  for (std::int64_t begin = 0; begin < rows; begin += o.batch_size) {
    const std::int64_t end = std::min(begin + o.batch_size, rows);
    feed_map batch;
    for (const auto& [name, value] : inputs) batch.emplace(name, value.slice(begin, end));
    auto fetched = executor->train(batch, m.fetches);
    for (std::size_t k = 0; k < fetched.size(); ++k) batches[k].push_back(std::move(fetched[k]));
    batch_rows.push_back(end - begin);
  }
  out << "inferred " << rows << " rows in " << batch_rows.size() << " batches of " << o.batch_size
      << " on " << o.places_text() << " with the " << spelling(o.executor) << " executor\n";
  for (std::size_t k = 0; k < m.fetches.size(); ++k) {
    const std::string& name = m.fetches[k];
    // Batches merge as places do: rows concatenated, a per-batch scalar weighted by rows.
    const tensor all = merge_fetch(batches[k], name, declared.at(name).dims, batch_rows);
    const std::string file = output_file(o.output, name);
    write_npy(file, all);
    out << "wrote " << name << " " << to_string(all.shape()) << " to " << file << '\n';
  }
}

} // namespace pe
