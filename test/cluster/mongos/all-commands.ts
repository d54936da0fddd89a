/** Loads every router command module so that each registers its commands. */
import './admin.js';
import './access.js';
import './cursor-commands.js';
import './reads.js';
import './writes.js';
import './ddl.js';
import './transactions.js';
import './sharding-admin.js';
