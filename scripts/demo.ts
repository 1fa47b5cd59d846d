// The main job on embedded defaults. Grows with the gateway; for now it shows the money core.
import { formatAmount, parseAmount } from '../src/money.js'

console.log('Tollgate demo: price of a call', formatAmount(parseAmount('$0.02')), 'USDC')
