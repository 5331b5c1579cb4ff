// The quantized fixtures (fixtures/quantized/<family>/...) as the JS tests use them: a
// case's model file, the config files a user would have beside it, and the bytes the
// producer's own dequantizer wrote.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES } from './helpers.js';

export const QUANT = join(FIXTURES, 'quantized');

// A fixture in either layout: <variant>.safetensors / .config.json / .expected.safetensors
// beside each other, or a <variant>/ folder holding model.safetensors, config.json and
// expected.safetensors. `configs` ({ name in the folder: path under fixtures/quantized })
// replaces the fixture's own config.json, e.g. with a quantize_config.json alone.
export function fixtureFiles(family, variant, configs = null) {
  const folder = join(QUANT, family, variant);
  const inFolder = existsSync(join(folder, 'model.safetensors'));
  const at = (folderName, suffix) => (inFolder ? join(folder, folderName) : `${folder}${suffix}`);
  const ownConfig = at('config.json', '.config.json');
  const list = configs ? Object.entries(configs).map(([name, path]) => ({ name, path: join(QUANT, path) }))
    : existsSync(ownConfig) ? [{ name: 'config.json', path: ownConfig }] : [];
  return { model: at('model.safetensors', '.safetensors'), expected: at('expected.safetensors', '.expected.safetensors'), configs: list };
}

// GPTQ v2 whose checkpoint_format is only in quantize_config.json (config.json has no
// quantization_config): read as v1 it would decode to other values.
export const GPTQ_V2_QUANTIZE_CONFIG_ONLY = {
  'config.json': 'gptq/config_files/config.no_quantization_config.json',
  'quantize_config.json': 'gptq/w4_g128_asym_v2/quantize_config.json',
};
