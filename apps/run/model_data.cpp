#include "apps/run/model_data.hpp"

#include <cstring>

#include "apps/run/model.hpp"
#include "core/error.hpp"
#include "data/npy_dir.hpp"
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

void fit_split(dataset& d, const var_table& vars, const feed_names& feeds,
               const data_spec& spec, bool test) {
  const bool reshapeable = !spec.format.feeds_by_name;
  auto origin = [&](const std::string& var) { return spec.format.origin(spec.dir, var, test); };
  auto declared = [&](const std::string& var) -> const var_info& {
    auto it = vars.find(var);
    if (it == vars.end())
      throw error(origin(var) + ": the program declares no variable '" + var + "'");
    return it->second;
  };
  d.images = fit(d.images, feeds.image, declared(feeds.image), origin(feeds.image), reshapeable);
  d.labels = fit(d.labels, feeds.label, declared(feeds.label), origin(feeds.label), reshapeable);
}

} // namespace

void fit_to_program(data_splits& data, const proto::ProgramDesc& program,
                    const feed_names& feeds, const data_spec& spec) {
  auto vars = tensor_vars(program.blocks(0));
  fit_split(data.train, vars, feeds, spec, false);
  if (data.test)
    fit_split(*data.test, vars, feeds, spec, true);
}

model_and_data load_model_and_data(const run_options& o) {
  model_and_data r;
  if (o.builtin_model()) {
    r.data = o.data_source.format.load(o.data_source.dir, {o.seed, o.normalize, builtin_feeds});
    r.model = prepare_model(o, r.data.train.width());
  } else {
    r.model = prepare_model(o, 0);
    r.data = o.data_source.format.load(o.data_source.dir, {o.seed, o.normalize, {r.model.image, r.model.label}});
  }
  fit_to_program(r.data, r.model.main, {r.model.image, r.model.label}, o.data_source);
  return r;
}

} // namespace pe
