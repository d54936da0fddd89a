/** Loads every command module so that each registers its commands. */
import './handshake.js';
import './cursors.js';
import './crud.js';
import './update.js';
import './delete.js';
import './findandmodify.js';
import './count.js';
import './aggregate.js';
import './indexes.js';
import './catalog.js';
import './rename.js';
import './collmod.js';
import './stats.js';
import '../txn/wrapper.js';
import '../txn/commands.js';
import './auth.js';
import './admin.js';
