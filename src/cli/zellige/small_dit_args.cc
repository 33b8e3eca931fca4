#include "cli/zellige/small_dit_args.h"

#include <string>

#include "cli/options.h"

namespace tessera::cli {

void AddSmallDitOptions(CLI::App* app, SmallDitArgs* a) {
  app->add_option("--hidden", a->hidden, "SmallDit width")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  app->add_option("--heads", a->heads, "attention heads (head dim = hidden / heads)")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  app->add_option("--layers", a->layers, "transformer blocks")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  app->add_option("--ffn", a->ffn, "FFN hidden size")
      ->transform(Integer(1, 1 << 22))
      ->capture_default_str();
  app->add_option("--channels", a->channels, "latent channels per token")
      ->transform(Integer(1, 1 << 16))
      ->capture_default_str();
}

core::Status ValidateSmallDitArgs(const SmallDitArgs& a) {
  if (a.hidden < 1 || a.heads < 1 || a.hidden % a.heads != 0) {
    return core::InvalidArgument("--hidden / --heads: got " + std::to_string(a.hidden) + " / " +
                                 std::to_string(a.heads) + ", heads must divide hidden (>= 1)");
  }
  if (a.layers < 1 || a.ffn < 1 || a.channels < 1) {
    return core::InvalidArgument("--layers / --ffn / --channels: got " + std::to_string(a.layers) +
                                 " / " + std::to_string(a.ffn) + " / " +
                                 std::to_string(a.channels) + ", must be >= 1");
  }
  return core::Status::Ok();
}

models::SmallDitConfig ToSmallDitConfig(const SmallDitArgs& a) {
  models::SmallDitConfig c;
  c.in_channels = a.channels;
  c.hidden = a.hidden;
  c.num_heads = a.heads;
  c.num_layers = a.layers;
  c.ffn_hidden = a.ffn;
  c.init_seed = a.init_seed;
  return c;
}

zellige::ProfileModel ToProfileModel(const SmallDitArgs& a) {
  zellige::ProfileModel m;
  m.in_channels = a.channels;
  m.hidden = a.hidden;
  m.heads = a.heads;
  m.head_dim = a.hidden / a.heads;
  m.layers = a.layers;
  m.ffn = a.ffn;
  return m;
}

}  // namespace tessera::cli
