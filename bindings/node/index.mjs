// The ESM entry point of @sessdb/node: the same module as `require('@sessdb/node')`.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const binding = require('./index.js')

export const Store = binding.Store
export const translate = binding.translate
export const platformKey = binding.platformKey
export default binding
