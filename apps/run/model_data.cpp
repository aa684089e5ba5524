#include "apps/run/model_data.hpp"

#include <cstring>

#include "apps/run/model.hpp"
#include "core/error.hpp"
#include "graph/program_info.hpp"
#include "graph/validate.hpp"

namespace pe {

namespace {

shape_t row_shape(const shape_t& dims) {
  return dims.empty() ? dims : shape_t(dims.begin() + 1, dims.end());
}

bool fully_known(const shape_t& dims) {
  for (auto d : dims)
    if (d < 0)
      return false;
  return true;
}

/// `t` as feed `var` declared as `declared` (see fit_to_program); `origin` names the data.
tensor fit(const tensor& t, const std::string& var, const var_info& declared,
           const std::string& origin, bool reshapeable) {
  if (t.type() != declared.type)
    throw error(origin + ": feed '" + var + "' is " + to_string(t.type()) +
                ", the program declares " + to_string(declared.type));
  if (declared.dims.empty())
    throw error(origin + ": feed '" + var + "' is declared a scalar; it needs a batch dim");
  auto rows = row_shape(t.shape()), want = row_shape(declared.dims);
  if (dims_compatible(rows, want))
    return t;
  if (!reshapeable || !fully_known(want) || numel_of(want) != numel_of(rows))
    throw error(origin + ": feed '" + var + "' has rows of shape " + to_string(rows) +
                " (width " + std::to_string(numel_of(rows)) + "), the program declares " +
                to_string(declared.dims) +
                (fully_known(want) ? " (width " + std::to_string(numel_of(want)) + ")" : ""));
  shape_t shape{t.dim(0)};
  shape.insert(shape.end(), want.begin(), want.end());
  tensor reshaped(t.type(), shape);
  std::memcpy(reshaped.raw(), t.raw(), t.bytes());
  return reshaped;
}

/// The program's feeds (its data inputs) and their declarations, which data is fitted to;
/// `origin` names the data in errors.
class program_feeds {
 public:
  explicit program_feeds(const proto::ProgramDesc& program)
    : names_(analyze_program(program).feeds), vars_(tensor_vars(program.blocks(0))) {}

  const std::vector<std::string>& names() const { return names_; }

  const var_info& declared(const std::string& var, const std::string& origin) const {
    auto it = vars_.find(var);
    if (it == vars_.end())
      throw error(origin + ": the program declares no tensor variable '" + var + "'");
    return it->second;
  }

  /// "input_ids (INT64), label (INT64)".
  std::string listed() const {
    std::string out;
    for (const auto& name : names_) {
      auto it = vars_.find(name);
      out += (out.empty() ? "" : ", ") + name + " (" +
             (it == vars_.end() ? std::string("not a declared tensor") : to_string(it->second.type)) + ")";
    }
    return out.empty() ? "none" : out;
  }

  /// For data with feeds of its own (`d`): the program feed each of them goes to, in the
  /// data's order, the program's one feed of its dtype. Throws pe::error listing both sides
  /// unless they pair up one to one.
  std::vector<std::string> paired_by_dtype(const dataset& d, const std::string& origin) const {
    std::vector<std::string> targets;
    for (const auto& f : d.feeds()) {
      std::vector<std::string> same;
      for (const auto& name : names_)
        if (auto it = vars_.find(name); it != vars_.end() && it->second.type == f.rows.type())
          same.push_back(name);
      if (same.size() != 1) break;
      targets.push_back(same.front());
    }
    if (targets.size() != d.feeds().size() || names_.size() != d.feeds().size()) {
      std::string have;
      for (const auto& f : d.feeds())
        have += (have.empty() ? "" : ", ") + f.name + " (" + to_string(f.rows.type()) + ")";
      throw error(origin + " feeds " + have + ", each to the program's one feed of its dtype; "
                  "the program's feeds are " + listed() +
                  " (--data npy:DIR feeds any feeds by their names)");
    }
    return targets;
  }

 private:
  std::vector<std::string> names_;
  var_table vars_;
};

void fit_split(dataset& d, const program_feeds& feeds, const data_spec& spec, bool test) {
  auto origin = [&](const std::string& var) { return spec.format.origin(spec.dir, var, test); };
  std::vector<data_feed> fitted;
  if (spec.format.feeds_by_name) {
    for (const auto& name : feeds.names())
      fitted.push_back({name, fit(d.at(name), name, feeds.declared(name, origin(name)), origin(name), false)});
  } else {
    const auto targets = feeds.paired_by_dtype(d, origin(""));
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const auto& var = targets[i];
      fitted.push_back({var, fit(d.feeds()[i].rows, var, feeds.declared(var, origin(var)), origin(var), true)});
    }
  }
  d = dataset(std::move(fitted));
}

} // namespace

void fit_to_program(data_splits& data, const proto::ProgramDesc& program, const data_spec& spec) {
  const program_feeds feeds(program);
  fit_split(data.train, feeds, spec, false);
  if (data.test)
    fit_split(*data.test, feeds, spec, true);
}

model_and_data load_model_and_data(const run_options& o) {
  model_and_data r;
  const data_format& format = o.data_source.format;
  if (o.builtin_model()) {
    r.data = format.load(o.data_source.dir, {o.seed, o.normalize, builtin_feeds});
    r.model = prepare_model(o, r.data.train.width(image_feed));
  } else {
    r.model = prepare_model(o, 0);
    r.data = format.load(o.data_source.dir, {o.seed, o.normalize, analyze_program(r.model.main).feeds});
  }
  fit_to_program(r.data, r.model.main, o.data_source);
  return r;
}

} // namespace pe
